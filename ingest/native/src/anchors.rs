//! Whether a chunk of JSON text may hold a secret: `_ANCHORS` of ingest/secrets.py, every
//! one tested in one pass over the bytes (RE2 took twelve, 1.25 s of CPU for the 254 MB
//! trace, most chunks of which hold none). Exactly the same answer as the RE2 scans, which
//! stay the reference: any literal anchor (case as written), or a secret word (ASCII case
//! folded, as RE2 folds them over Latin-1 text) before spaces and a colon.

/// Literal anchors (see `_LITERAL_ANCHORS`), found by their first byte: bytes no anchor
/// starts with are passed over by one table lookup each (testing every literal at every byte
/// ran at 180 MB/s).
const LITERALS: [&[u8]; 11] = [
    b"=", b"@", b"--", b"':", b"\\\":", b": '", b": \\\"", b"earer ", b"EARER ", b"asic ", b"ASIC ",
];

/// The bytes an anchor may start at: a literal's first byte, or a colon (a secret word before
/// it).
const STARTS: [bool; 256] = {
    let mut table = [false; 256];
    let mut index = 0;
    while index < LITERALS.len() {
        table[LITERALS[index][0] as usize] = true;
        index += 1;
    }
    table[b':' as usize] = true;
    table
};

/// The secret words that end a name (`_WORD`), but those ending in `key` or `keys`.
const WORDS: [&[u8]; 12] = [
    b"token",
    b"secret",
    b"secrets",
    b"passwd",
    b"passwds",
    b"password",
    b"passwords",
    b"passphrase",
    b"credential",
    b"credentials",
    b"auth",
    b"authorization",
];
/// What comes before `key`/`keys` (and an optional `_` or `-`) in a secret word.
const KEY_PREFIXES: [&[u8]; 4] = [b"api", b"private", b"access", b"secret"];

fn ends_with_folded(text: &[u8], word: &[u8]) -> bool {
    text.len() >= word.len() && text[text.len() - word.len()..].eq_ignore_ascii_case(word)
}

/// Whether `text` ends with a secret word (`_WORD`).
fn ends_with_word(text: &[u8]) -> bool {
    if WORDS.iter().any(|word| ends_with_folded(text, word)) {
        return true;
    }
    for key in [&b"keys"[..], b"key"] {
        if ends_with_folded(text, key) {
            let before = &text[..text.len() - key.len()];
            let separated = match before.last() {
                Some(b'_' | b'-') => &before[..before.len() - 1],
                _ => before,
            };
            for candidate in [before, separated] {
                if KEY_PREFIXES
                    .iter()
                    .any(|prefix| ends_with_folded(candidate, prefix))
                {
                    return true;
                }
            }
        }
    }
    false
}

/// Whether `data` holds any anchor of a secret rule.
pub fn has_anchor(data: &[u8]) -> bool {
    for (at, &byte) in data.iter().enumerate() {
        if !STARTS[byte as usize] {
            continue;
        }
        let rest = &data[at..];
        if LITERALS
            .iter()
            .any(|literal| literal[0] == byte && rest.starts_with(literal))
        {
            return true;
        }
        if byte == b':' {
            let mut end = at;
            while end > 0 && data[end - 1] == b' ' {
                end -= 1;
            }
            // Every secret word ends in a letter: a key's closing quote, the usual byte
            // before a colon in JSON, ends none.
            if end > 0 && data[end - 1].is_ascii_alphabetic() && ends_with_word(&data[..end]) {
                return true;
            }
        }
    }
    false
}
