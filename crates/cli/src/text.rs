//! Keys and values on the command line and in printed output.
//!
//! Without `--hex`, bytes are text: printable ASCII stands for itself and
//! any other byte (and the backslash) is written `\xNN`, which is also
//! accepted on input, so anything printed can be typed back. With `--hex`,
//! input and output are plain hexadecimal (`6b6579` for `key`).

use std::fmt::Write as _;

use crate::error::{Result, UsageSnafu};

/// `--hex`, on every command that reads or prints keys and values.
#[derive(Debug, clap::Args)]
pub(crate) struct HexArgs {
    /// Keys and values in hexadecimal (`6b6579` for `key`), in the
    /// arguments and in the output; without it, printable text with
    /// `\xNN` escapes for other bytes.
    #[arg(long)]
    pub hex: bool,
}

impl HexArgs {
    /// How keys and values are written.
    pub(crate) fn encoding(&self) -> Encoding {
        Encoding::new(self.hex)
    }
}

/// How bytes are read from arguments and printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Printable text with `\xNN` escapes.
    Escaped,
    /// Hexadecimal.
    Hex,
}

impl Encoding {
    /// `Hex` when `hex`, else `Escaped`.
    pub(crate) fn new(hex: bool) -> Self {
        if hex {
            Encoding::Hex
        } else {
            Encoding::Escaped
        }
    }

    /// Decodes argument `what` (for the error message) given as `text`.
    pub(crate) fn parse(self, what: &str, text: &str) -> Result<Vec<u8>> {
        let decoded = match self {
            // The internal-key text form's decoder: the same `\xNN` rule.
            Encoding::Escaped => lithify::text::unescape(text),
            Encoding::Hex => unhex(text),
        };
        match decoded {
            Some(bytes) => Ok(bytes),
            None => UsageSnafu {
                message: format!(
                    "{what} {text:?} is not valid {}",
                    match self {
                        Encoding::Escaped => "text (a backslash must start a \\xNN escape)",
                        Encoding::Hex => "hexadecimal",
                    }
                ),
            }
            .fail(),
        }
    }

    /// Appends `bytes` to `out`.
    pub(crate) fn write(self, out: &mut String, bytes: &[u8]) {
        match self {
            Encoding::Escaped => {
                for &b in bytes {
                    if (b' '..=b'~').contains(&b) && b != b'\\' {
                        out.push(char::from(b));
                    } else {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
            }
            Encoding::Hex => {
                for &b in bytes {
                    let _ = write!(out, "{b:02x}");
                }
            }
        }
    }

    /// `bytes` as a new string.
    pub(crate) fn show(self, bytes: &[u8]) -> String {
        let mut s = String::with_capacity(bytes.len());
        self.write(&mut s, bytes);
        s
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.strip_prefix("0x").unwrap_or(text);
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_encodings_round_trip_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        for e in [Encoding::Escaped, Encoding::Hex] {
            let shown = e.show(&all);
            assert_eq!(e.parse("key", &shown).unwrap(), all);
        }
        assert_eq!(Encoding::Escaped.show(b"a b\\\n"), "a b\\x5c\\x0a");
        assert_eq!(Encoding::Hex.show(b"key"), "6b6579");
        assert_eq!(Encoding::Hex.parse("key", "0x6B6579").unwrap(), b"key");
    }

    #[test]
    fn malformed_input_is_a_usage_error() {
        for (e, text) in [
            (Encoding::Escaped, "a\\"),
            (Encoding::Escaped, "a\\n"),
            (Encoding::Escaped, "\\xZZ"),
            (Encoding::Hex, "abc"),
            (Encoding::Hex, "zz"),
        ] {
            let err = e.parse("key", text).unwrap_err().to_string();
            assert!(err.starts_with("key "), "{err}");
        }
    }
}
