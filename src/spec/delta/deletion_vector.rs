//! Deletion vectors: the descriptor an `add` or `remove` carries, and the
//! file it lives in (`u`: a Z85 UUID under an optional prefix, `p`: an
//! absolute path, `i`: inline, no file).

use serde::{Deserialize, Serialize};

use super::{is_absolute, LogPath};
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// A deletion vector descriptor (`add.deletionVector`, `remove.deletionVector`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVector {
    /// `u` (relative, UUID-named), `p` (absolute path) or `i` (inline).
    pub storage_type: String,
    /// Prefix + Z85 UUID, encoded absolute path, or inline bitmap.
    pub path_or_inline_dv: String,
    /// Start of the vector in the file (files may hold several).
    #[serde(default)]
    pub offset: Option<i64>,
}

/// The Z85 alphabet, in digit order.
const Z85: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Decodes Z85 text (a multiple of 5 characters) into bytes.
pub fn z85_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if b.len() % 5 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 5 * 4);
    for chunk in b.chunks(5) {
        let mut v: u64 = 0;
        for &c in chunk {
            let d = Z85.iter().position(|&z| z == c)? as u64;
            v = v * 85 + d;
        }
        if v > u64::from(u32::MAX) {
            return None;
        }
        out.extend_from_slice(&(v as u32).to_be_bytes());
    }
    Some(out)
}

/// The file a deletion vector lives in, or `None` for inline vectors.
pub fn dv_file(uri: &str, dv: &DeletionVector) -> Result<Option<LogPath>> {
    match dv.storage_type.as_str() {
        "i" => Ok(None),
        "p" => {
            if !is_absolute(&dv.path_or_inline_dv) {
                return Err(Error::malformed(MalformedReason::Path,
                    uri,
                    format!(
                        "deletion vector of storage type p names `{}`, which is not an absolute path",
                        dv.path_or_inline_dv
                    ),
                ));
            }
            LogPath::parse(uri, &dv.path_or_inline_dv).map(Some)
        }
        "u" => {
            let s = &dv.path_or_inline_dv;
            if s.len() < 20 || !s.is_char_boundary(s.len() - 20) {
                return Err(Error::malformed(
                    MalformedReason::Path,
                    uri,
                    format!("deletion vector `{s}` is shorter than a Z85 UUID"),
                ));
            }
            let (prefix, id) = s.split_at(s.len() - 20);
            let Some(bytes) = z85_decode(id) else {
                return Err(Error::malformed(
                    MalformedReason::Path,
                    uri,
                    format!("deletion vector `{s}`: invalid Z85 UUID"),
                ));
            };
            let h: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let name = format!(
                "deletion_vector_{}-{}-{}-{}-{}.bin",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            );
            Ok(Some(LogPath::Relative(if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            })))
        }
        t => Err(Error::unsupported(
            format!("deletion vector storage type `{t}`"),
            uri,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_vector_file_names() {
        // From the Delta protocol's example: prefix "ab", UUID d2c639aa-8816-431a-aaf6-d3fe2512ff61.
        let dv = DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(4),
        };
        assert_eq!(
            dv_file("u", &dv).unwrap().unwrap(),
            LogPath::Relative("ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin".into())
        );
        let inline = DeletionVector {
            storage_type: "i".into(),
            path_or_inline_dv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L".into(),
            offset: None,
        };
        assert_eq!(dv_file("u", &inline).unwrap(), None);
        let abs = DeletionVector {
            storage_type: "p".into(),
            path_or_inline_dv: "s3://b/t/dv%20x.bin".into(),
            offset: None,
        };
        assert_eq!(
            dv_file("u", &abs).unwrap().unwrap(),
            LogPath::Absolute("s3://b/t/dv x.bin".into())
        );
        let rel_p = DeletionVector {
            storage_type: "p".into(),
            path_or_inline_dv: "dv.bin".into(),
            offset: None,
        };
        assert!(dv_file("u", &rel_p).is_err());
        let short = DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: "abc".into(),
            offset: None,
        };
        assert!(dv_file("u", &short).is_err());
        let odd = DeletionVector {
            storage_type: "x".into(),
            path_or_inline_dv: String::new(),
            offset: None,
        };
        assert!(matches!(dv_file("u", &odd), Err(Error::Unsupported { .. })));
    }
}
