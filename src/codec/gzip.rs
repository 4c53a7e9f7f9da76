//! Gzip members (RFC 1952), for `*.gz.metadata.json` files.

/// True when `bytes` starts with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// Decompresses one gzip member, checking its CRC-32 and length trailer.
/// `limit` caps the output size in bytes.
pub fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    if bytes.len() < 18 || !is_gzip(bytes) {
        return Err("not a gzip member".into());
    }
    if bytes[2] != 8 {
        return Err(format!(
            "gzip compression method {} (only deflate is defined)",
            bytes[2]
        ));
    }
    let flags = bytes[3];
    let mut pos = 10usize;
    let need = |pos: usize, n: usize| {
        if pos + n <= bytes.len() {
            Ok(())
        } else {
            Err("truncated gzip header".to_string())
        }
    };
    if flags & 0x04 != 0 {
        need(pos, 2)?;
        let xlen = usize::from(u16::from_le_bytes([bytes[pos], bytes[pos + 1]]));
        pos += 2;
        need(pos, xlen)?;
        pos += xlen;
    }
    for bit in [0x08u8, 0x10] {
        if flags & bit != 0 {
            let Some(end) = bytes[pos..].iter().position(|&b| b == 0) else {
                return Err("truncated gzip header".into());
            };
            pos += end + 1;
        }
    }
    if flags & 0x02 != 0 {
        need(pos, 2)?;
        pos += 2;
    }
    if bytes.len() < pos + 8 {
        return Err("truncated gzip member".into());
    }
    let body = &bytes[pos..bytes.len() - 8];
    let out = miniz_oxide::inflate::decompress_to_vec_with_limit(body, limit)
        .map_err(|e| format!("gzip: {e}"))?;
    let t = &bytes[bytes.len() - 8..];
    let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
    if crc32fast::hash(&out) != crc || out.len() as u32 != isize {
        return Err("gzip trailer mismatch (corrupt or truncated)".into());
    }
    Ok(out)
}

/// One gzip member of `data` (deflate at `level`, 0–10; no name, no
/// time: the same bytes always compress alike). Members hold at most
/// 4 GiB (the trailer's length is 32 bits): larger data is refused.
pub fn gzip(data: &[u8], level: u8) -> Result<Vec<u8>, String> {
    let len = u32::try_from(data.len()).map_err(|_| "gzip: a member holds at most 4 GiB")?;
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    out.extend(miniz_oxide::deflate::compress_to_vec(data, level));
    out.extend(crc32fast::hash(data).to_le_bytes());
    out.extend(len.to_le_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let z = gzip(b"{\"a\":1}", 6).unwrap();
        assert_eq!(gunzip(&z, 1 << 20).unwrap(), b"{\"a\":1}");
        for cut in 0..z.len() {
            assert!(gunzip(&z[..cut], 1 << 20).is_err());
        }
    }
}
