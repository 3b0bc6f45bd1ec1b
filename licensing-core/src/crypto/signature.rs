use sha2::{Digest, Sha256};

/// The response header that carries the Ed25519 signature (ext).
pub const SIGNATURE_HEADER: &str = "X-Signature";

/// The response header that names the key of [`SIGNATURE_HEADER`] by its id (ext).
pub const SIGNATURE_KEY_ID_HEADER: &str = "X-Signature-Key-Id";

const DOMAIN: &[u8] = b"licensing-v1\n";

/// The exact bytes a response signature covers:
/// `"licensing-v1\n" + hex(SHA-256(request body)) + "\n" + response body`.
pub fn response_signature_message(request_body: &[u8], response_body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(DOMAIN.len() + 65 + response_body.len());
    message.extend_from_slice(DOMAIN);
    let mut hex_digest = [0u8; 64];
    // Cannot fail: the buffer is exactly twice the digest length.
    let _ = hex::encode_to_slice(Sha256::digest(request_body), &mut hex_digest);
    message.extend_from_slice(&hex_digest);
    message.push(b'\n');
    message.extend_from_slice(response_body);
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_layout() {
        let m = response_signature_message(b"abc", b"{\"x\":1}");
        let text = String::from_utf8(m).unwrap();
        assert_eq!(
            text,
            "licensing-v1\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n{\"x\":1}"
        );
    }
}
