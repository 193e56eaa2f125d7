//! A strict JSON scanner over UTF-8 bytes (RFC 8259, as msgspec reads it).
//!
//! Everything this core does not reproduce exactly is `Unsupported`, not an error: the caller
//! then decodes the chunk with the Python reference, which gives the exact result or the exact
//! error message. So the scanner refuses, rather than interprets, whatever is odd: escapes in
//! object keys, lone surrogate escapes, nesting deeper than MAX_DEPTH, a key twice in an object.

/// The chunk is outside what the native decoder reproduces; decode it with the reference.
#[derive(Debug)]
pub struct Unsupported;

pub type Res<T> = Result<T, Unsupported>;

/// Nesting read natively; deeper values (the reference names the byte past its own limit)
/// go to the reference.
pub const MAX_DEPTH: usize = 64;

pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    /// The keys of the objects being copied, innermost last (each object's are checked for a
    /// repeat, then dropped): one buffer for them all, not an allocation per object.
    keys: Vec<&'a [u8]>,
}

/// The bytes a string's plain run stops at: a quote, a backslash, a control character.
const STRING_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Where the plain run of a string's bytes from `at` ends: the first byte of STRING_STOP, or
/// the end of `buf`. Eight bytes are tested at once (SWAR), the strings of traces being long
/// (kernel names, args): in `found`, a byte's high bit is set where it is a quote or a
/// backslash (zero after the xor) or below 0x20 (bytes from 0x80 cleared by `!word`). A
/// borrow can set bits above the first such byte only, so the lowest bit set is exact.
fn plain_run_end(buf: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while let Some(bytes) = buf.get(at..at + 8) {
        let word = u64::from_le_bytes(bytes.try_into().unwrap());
        let quote = word ^ (ONES * b'"' as u64);
        let backslash = word ^ (ONES * b'\\' as u64);
        let found = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGHS;
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < buf.len() && !STRING_STOP[buf[at] as usize] {
        at += 1;
    }
    at
}

/// A value's place in a compact copy: (key as written, start, end in the copy).
pub type Member<'a> = (&'a [u8], usize, usize);

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor {
            buf,
            pos: 0,
            keys: Vec::new(),
        }
    }

    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    pub fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
            // Pretty-printed traces indent every line (Kineto's and json.dump's indent=2):
            // runs of spaces are passed eight at a time.
            while let Some(word) = self.buf.get(self.pos..self.pos + 8) {
                if word != b"        " {
                    break;
                }
                self.pos += 8;
            }
        }
    }

    /// Consume `byte` (after whitespace).
    pub fn expect(&mut self, byte: u8) -> Res<()> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Unsupported)
        }
    }

    /// Consume `byte` if it comes next (after whitespace).
    pub fn accept(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A string at the cursor: its bytes between the quotes as written, and whether they hold
    /// an escape. Escapes are checked; raw control characters are refused.
    pub fn raw_string(&mut self) -> Res<(&'a [u8], bool)> {
        if self.peek() != Some(b'"') {
            return Err(Unsupported);
        }
        let start = self.pos + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            at = plain_run_end(self.buf, at);
            match self.buf.get(at) {
                None => return Err(Unsupported),
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    at = check_escape(self.buf, at)?;
                }
                Some(_) => return Err(Unsupported), // a raw control character
            }
        }
        self.pos = at + 1;
        Ok((&self.buf[start..at], escaped))
    }

    /// A number at the cursor, as written, and whether it is an integer (no fraction or
    /// exponent). Validated by JSON's grammar.
    pub fn number(&mut self) -> Res<(&'a [u8], bool)> {
        let start = self.pos;
        let buf = self.buf;
        let mut at = start;
        if buf.get(at) == Some(&b'-') {
            at += 1;
        }
        match buf.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => at = digits_end(buf, at),
            _ => return Err(Unsupported),
        }
        let mut integer = true;
        if buf.get(at) == Some(&b'.') {
            integer = false;
            let end = digits_end(buf, at + 1);
            if end == at + 1 {
                return Err(Unsupported);
            }
            at = end;
        }
        if let Some(b'e' | b'E') = buf.get(at) {
            integer = false;
            at += 1;
            if let Some(b'+' | b'-') = buf.get(at) {
                at += 1;
            }
            let end = digits_end(buf, at);
            if end == at {
                return Err(Unsupported);
            }
            at = end;
        }
        self.pos = at;
        Ok((&buf[start..at], integer))
    }

    /// Consume a literal (`true`, `false`, `null`).
    fn literal(&mut self, word: &[u8]) -> Res<()> {
        if self.buf[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Unsupported)
        }
    }

    /// Whether `null` comes next (consumed if so).
    pub fn null(&mut self) -> bool {
        self.skip_whitespace();
        self.literal(b"null").is_ok()
    }

    /// Copy the value at the cursor to `out` without its whitespace (as msgspec's
    /// `json.format(indent=-1)` writes it: strings and numbers byte for byte). When the value
    /// is an object and `members` is given, each member's key and place in `out` is recorded.
    pub fn copy_value(
        &mut self,
        out: &mut Vec<u8>,
        depth: usize,
        members: Option<&mut Vec<Member<'a>>>,
    ) -> Res<()> {
        self.skip_whitespace();
        let start = self.pos;
        match self.peek().ok_or(Unsupported)? {
            b'"' => {
                self.raw_string()?;
            }
            b'{' => return self.copy_object(out, depth + 1, members),
            b'[' => return self.copy_array(out, depth + 1),
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => {
                self.number()?;
            }
        }
        out.extend_from_slice(&self.buf[start..self.pos]);
        Ok(())
    }

    fn copy_object(
        &mut self,
        out: &mut Vec<u8>,
        depth: usize,
        mut members: Option<&mut Vec<Member<'a>>>,
    ) -> Res<()> {
        if depth > MAX_DEPTH {
            return Err(Unsupported);
        }
        self.pos += 1;
        out.push(b'{');
        let first_key = self.keys.len();
        if !self.accept(b'}') {
            loop {
                self.skip_whitespace();
                let key = self.key()?;
                self.keys.push(key);
                out.push(b'"');
                out.extend_from_slice(key);
                out.extend_from_slice(b"\":");
                self.expect(b':')?;
                self.skip_whitespace();
                let value_start = out.len();
                self.copy_value(out, depth, None)?;
                if let Some(list) = members.as_deref_mut() {
                    list.push((key, value_start, out.len()));
                }
                if self.accept(b'}') {
                    break;
                }
                self.expect(b',')?;
                out.push(b',');
            }
        }
        out.push(b'}');
        let unique = check_unique(&mut self.keys[first_key..]);
        self.keys.truncate(first_key);
        unique
    }

    fn copy_array(&mut self, out: &mut Vec<u8>, depth: usize) -> Res<()> {
        if depth > MAX_DEPTH {
            return Err(Unsupported);
        }
        self.pos += 1;
        out.push(b'[');
        if !self.accept(b']') {
            loop {
                self.copy_value(out, depth, None)?;
                if self.accept(b']') {
                    break;
                }
                self.expect(b',')?;
                out.push(b',');
            }
        }
        out.push(b']');
        Ok(())
    }

    /// An object key without escapes (a key with one could equal another written
    /// differently: the reference compares them).
    pub fn key(&mut self) -> Res<&'a [u8]> {
        match self.raw_string()? {
            (key, false) => Ok(key),
            _ => Err(Unsupported),
        }
    }
}

/// A repeated key is an error the reference names; here, unsupported.
fn check_unique(keys: &mut [&[u8]]) -> Res<()> {
    if keys.len() < 2 {
        return Ok(());
    }
    keys.sort_unstable();
    if keys.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(Unsupported);
    }
    Ok(())
}

fn digits_end(buf: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = buf.get(at) {
        at += 1;
    }
    at
}

fn hex4(buf: &[u8], at: usize) -> Res<u32> {
    let text = buf.get(at..at + 4).ok_or(Unsupported)?;
    let mut value = 0;
    for &byte in text {
        value = value * 16 + (byte as char).to_digit(16).ok_or(Unsupported)?;
    }
    Ok(value)
}

/// Check the escape at `at` (a backslash); return the index after it. A \u escape of a
/// surrogate must be a high one followed by a low one.
fn check_escape(buf: &[u8], at: usize) -> Res<usize> {
    match buf.get(at + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 2),
        Some(b'u') => {
            let unit = hex4(buf, at + 2)?;
            if (0xDC00..0xE000).contains(&unit) {
                return Err(Unsupported);
            }
            if (0xD800..0xDC00).contains(&unit) {
                if buf.get(at + 6..at + 8) != Some(b"\\u") {
                    return Err(Unsupported);
                }
                let low = hex4(buf, at + 8)?;
                if !(0xDC00..0xE000).contains(&low) {
                    return Err(Unsupported);
                }
                return Ok(at + 12);
            }
            Ok(at + 6)
        }
        _ => Err(Unsupported),
    }
}

/// Append the text of a string's bytes as written (checked by `raw_string`) to `out`.
pub fn unescape(raw: &[u8], out: &mut Vec<u8>) {
    let mut at = 0;
    while at < raw.len() {
        let Some(offset) = raw[at..].iter().position(|&b| b == b'\\') else {
            out.extend_from_slice(&raw[at..]);
            return;
        };
        out.extend_from_slice(&raw[at..at + offset]);
        at += offset;
        let simple = match raw[at + 1] {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            at += 2;
            continue;
        }
        let unit = hex4(raw, at + 2).unwrap_or(0);
        let (code, width) = if (0xD800..0xDC00).contains(&unit) {
            let low = hex4(raw, at + 8).unwrap_or(0xDC00);
            (0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), 12)
        } else {
            (unit, 6)
        };
        let character = char::from_u32(code).unwrap_or('\u{FFFD}');
        let mut encoded = [0; 4];
        out.extend_from_slice(character.encode_utf8(&mut encoded).as_bytes());
        at += width;
    }
}
