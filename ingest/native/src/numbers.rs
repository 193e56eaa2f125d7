//! Numbers from their JSON text, exactly: microseconds to integer nanoseconds without a
//! double (as `events.micros_to_ns` does with Python's Decimal), and integer arguments.

use crate::json::{Res, Unsupported};

/// Integer nanoseconds from a microsecond figure's JSON text (validated by the scanner):
/// digits past the third decimal truncated toward zero. Beyond the signed 64-bit range, or an
/// exponent too large to be worth reading, is unsupported (the reference names the event).
pub fn micros_to_ns(text: &[u8]) -> Res<i64> {
    if text.len() <= 18 && text.iter().all(u8::is_ascii_digit) {
        // The usual case, older Kineto's integer microseconds (16 digits since the epoch): no
        // sign, fraction or exponent; below 10^18, so only the nanoseconds may overflow.
        return short_digits(text).checked_mul(1000).ok_or(Unsupported);
    }
    let (negative, body) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mantissa_end = body
        .iter()
        .position(|&b| b == b'e' || b == b'E')
        .unwrap_or(body.len());
    let (mantissa, exponent) = body.split_at(mantissa_end);
    let exponent: i64 = if exponent.is_empty() {
        0
    } else {
        let digits = exponent[1..].strip_prefix(b"+").unwrap_or(&exponent[1..]);
        if digits.len() > 6 {
            return Err(Unsupported);
        }
        std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(Unsupported)?
    };
    let (whole, fraction) = match mantissa.iter().position(|&b| b == b'.') {
        Some(dot) => (&mantissa[..dot], &mantissa[dot + 1..]),
        None => (mantissa, &b""[..]),
    };
    // The value is digits x 10^shift nanoseconds, digits being whole and fraction together,
    // of which `kept` remain after truncation.
    let shift = exponent - fraction.len() as i64 + 3;
    let zeros = whole
        .iter()
        .chain(fraction)
        .take_while(|&&b| b == b'0')
        .count();
    let significant = whole.len() + fraction.len() - zeros;
    let digits = whole.iter().chain(fraction).skip(zeros);
    let kept = significant as i64 + shift.min(0);
    if significant == 0 || kept <= 0 {
        return Ok(0);
    }
    if kept + shift.max(0) > 20 {
        return Err(Unsupported); // at least 10^20 ns: beyond 64 bits
    }
    let mut value: i128 = 0;
    for &digit in digits.take(kept as usize) {
        value = value * 10 + (digit - b'0') as i128;
    }
    for _ in 0..shift.max(0) {
        value *= 10;
    }
    if negative {
        value = -value;
    }
    i64::try_from(value).map_err(|_| Unsupported)
}

/// An integer literal's value, or None for another number or one beyond 128 bits' reach.
pub fn integer(text: &[u8]) -> Option<i128> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    if digits.is_empty() || digits.len() > 30 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() <= 18 {
        let value = short_digits(digits) as i128;
        return Some(if text[0] == b'-' { -value } else { value });
    }
    let mut value: i128 = 0;
    for &digit in digits {
        value = value * 10 + (digit - b'0') as i128;
    }
    Some(if text[0] == b'-' { -value } else { value })
}

/// The value of at most 18 ASCII digits (below 10^18: in 64 bits, without the 128-bit
/// multiplications of longer ones).
fn short_digits(digits: &[u8]) -> i64 {
    digits.iter().fold(0, |n, &d| n * 10 + (d - b'0') as i64)
}
