//! The encrypted classloader body: a sequence of independently sealed AES-256-GCM frames.
//!
//! Each frame is `u32 big-endian L = 12 + 16 + n`, a 12-byte random nonce, the 16-byte tag and
//! `n` bytes of ciphertext (no associated data). The server seals [`FRAME_PLAINTEXT`] bytes per
//! frame. Frames are authenticated one by one, not as a sequence: a reader must compare the total
//! size and the checksum of the whole plaintext with what the server announced, which
//! [`DecryptingWriter::finish`] and [`Decrypted::verify`] do.

use std::io::{self, Read, Write};

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use rand::RngCore;

use super::{CryptoError, Md5Hasher, SessionKey};

/// Plaintext bytes per frame written by the server.
pub const FRAME_PLAINTEXT: usize = 64 * 1024;
/// Bytes a frame adds to its plaintext: length prefix, nonce, tag.
pub const FRAME_OVERHEAD: usize = 4 + NONCE_LEN + TAG_LEN;
/// Default cap on one frame's length field when reading, so a hostile stream cannot make a
/// reader buffer without bound. Large enough for a whole 10 MiB release in one frame, as other
/// servers may send it.
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024 + NONCE_LEN + TAG_LEN;

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// Seals plaintext chunks into frames.
pub struct FrameSealer {
    cipher: Aes256Gcm,
}

impl FrameSealer {
    /// A sealer for one download's key.
    pub fn new(key: &SessionKey) -> Self {
        Self {
            cipher: Aes256Gcm::new(key.as_bytes().into()),
        }
    }

    /// Appends one frame holding `plaintext` to `out`. Encrypts in place in `out`: the plaintext
    /// is copied once and never held twice.
    pub fn seal_into(&self, plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), CryptoError> {
        let len = u32::try_from(NONCE_LEN + TAG_LEN + plaintext.len())
            .map_err(|_| CryptoError::Corrupt("frame too long"))?;
        let start = out.len();
        out.reserve(FRAME_OVERHEAD + plaintext.len());
        out.extend_from_slice(&len.to_be_bytes());
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&[0u8; TAG_LEN]);
        out.extend_from_slice(plaintext);
        let body_start = start + FRAME_OVERHEAD;
        let tag = self
            .cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), b"", &mut out[body_start..])
            .map_err(|_| CryptoError::Backend)?;
        out[start + 4 + NONCE_LEN..body_start].copy_from_slice(&tag);
        Ok(())
    }

    /// One frame holding `plaintext`.
    pub fn seal(&self, plaintext: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let mut out = Vec::new();
        self.seal_into(plaintext, &mut out)?;
        Ok(out)
    }
}

/// Encrypts everything `data` holds into a frame stream in memory (for tests and small files).
pub fn encrypt_all(key: &SessionKey, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let sealer = FrameSealer::new(key);
    let frames = data.len().div_ceil(FRAME_PLAINTEXT);
    let mut out = Vec::with_capacity(data.len() + frames * FRAME_OVERHEAD);
    for chunk in data.chunks(FRAME_PLAINTEXT) {
        sealer.seal_into(chunk, &mut out)?;
    }
    Ok(out)
}

/// A reader of frames over a reader of plaintext: memory is one frame, whatever the file size.
pub struct EncryptingReader<R> {
    inner: R,
    sealer: FrameSealer,
    plain: Vec<u8>,
    frame: Vec<u8>,
    pos: usize,
    done: bool,
}

impl<R: Read> EncryptingReader<R> {
    /// Wraps `inner`, sealing [`FRAME_PLAINTEXT`] bytes per frame.
    pub fn new(inner: R, key: &SessionKey) -> Self {
        Self {
            inner,
            sealer: FrameSealer::new(key),
            plain: vec![0; FRAME_PLAINTEXT],
            frame: Vec::with_capacity(FRAME_PLAINTEXT + FRAME_OVERHEAD),
            pos: 0,
            done: false,
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        let mut filled = 0;
        while filled < self.plain.len() {
            match self.inner.read(&mut self.plain[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.frame.clear();
        self.pos = 0;
        if filled == 0 {
            self.done = true;
            return Ok(());
        }
        self.sealer
            .seal_into(&self.plain[..filled], &mut self.frame)
            .map_err(io::Error::other)
    }
}

impl<R: Read> Read for EncryptingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.frame.len() && !self.done {
            self.refill()?;
        }
        let available = &self.frame[self.pos..];
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.pos += n;
        Ok(n)
    }
}

/// Opens frames from input that arrives in pieces of any size.
pub struct FrameDecoder {
    cipher: Aes256Gcm,
    max_frame_len: usize,
    buf: Vec<u8>,
    /// Length of the frame being read (after its 4-byte prefix), once the prefix is complete.
    want: Option<usize>,
}

impl FrameDecoder {
    /// A decoder with the [`DEFAULT_MAX_FRAME_LEN`] cap.
    pub fn new(key: &SessionKey) -> Self {
        Self::with_max_frame_len(key, DEFAULT_MAX_FRAME_LEN)
    }

    /// A decoder that rejects frames whose length field exceeds `max_frame_len`.
    pub fn with_max_frame_len(key: &SessionKey, max_frame_len: usize) -> Self {
        Self {
            cipher: Aes256Gcm::new(key.as_bytes().into()),
            max_frame_len,
            buf: Vec::new(),
            want: None,
        }
    }

    /// Feeds `input`, handing each opened frame's plaintext to `sink`.
    pub fn update<E: From<CryptoError>>(
        &mut self,
        mut input: &[u8],
        sink: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        while !input.is_empty() {
            let need = self.want.unwrap_or(4);
            let take = (need - self.buf.len()).min(input.len());
            self.buf.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.buf.len() < need {
                break;
            }
            match self.want {
                None => {
                    let len =
                        u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                    let len = usize::try_from(len).unwrap_or(usize::MAX);
                    if len < NONCE_LEN + TAG_LEN || len > self.max_frame_len {
                        return Err(CryptoError::Corrupt("frame length out of range").into());
                    }
                    self.buf.clear();
                    self.buf.reserve(len);
                    self.want = Some(len);
                }
                Some(_) => {
                    let (head, body) = self.buf.split_at_mut(NONCE_LEN + TAG_LEN);
                    let (nonce, tag) = head.split_at(NONCE_LEN);
                    self.cipher
                        .decrypt_in_place_detached(
                            Nonce::from_slice(nonce),
                            b"",
                            body,
                            Tag::from_slice(tag),
                        )
                        .map_err(|_| CryptoError::Corrupt("frame failed authentication"))?;
                    sink(body)?;
                    self.buf.clear();
                    self.want = None;
                }
            }
        }
        Ok(())
    }

    /// Ends the stream: an incomplete frame left over means the stream was truncated.
    pub fn finish(self) -> Result<(), CryptoError> {
        if self.buf.is_empty() && self.want.is_none() {
            Ok(())
        } else {
            Err(CryptoError::Corrupt("stream ends inside a frame"))
        }
    }
}

/// Size and checksum of a decrypted stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decrypted {
    /// Plaintext bytes.
    pub size: u64,
    /// Lower-case hex MD5 of the plaintext.
    pub md5: String,
}

impl Decrypted {
    /// Compares with the announced `X-File-Size` and `X-File-Checksum` (hex, either case). Any
    /// dropped, duplicated or reordered frame changes one of them.
    pub fn verify(&self, expected_size: u64, expected_md5: &str) -> Result<(), CryptoError> {
        if self.size != expected_size {
            return Err(CryptoError::Corrupt(
                "decrypted size differs from the announced size",
            ));
        }
        if !self.md5.eq_ignore_ascii_case(expected_md5) {
            return Err(CryptoError::Corrupt(
                "decrypted checksum differs from the announced one",
            ));
        }
        Ok(())
    }
}

/// A writer that takes the encrypted stream in pieces of any size and writes the plaintext to
/// `inner`, counting its size and MD5 on the way.
pub struct DecryptingWriter<W> {
    inner: W,
    decoder: FrameDecoder,
    size: u64,
    md5: Md5Hasher,
}

impl<W: Write> DecryptingWriter<W> {
    /// Decrypts into `inner` with the default frame cap.
    pub fn new(inner: W, key: &SessionKey) -> Self {
        Self::with_decoder(inner, FrameDecoder::new(key))
    }

    /// Decrypts into `inner` with a configured decoder.
    pub fn with_decoder(inner: W, decoder: FrameDecoder) -> Self {
        Self {
            inner,
            decoder,
            size: 0,
            md5: Md5Hasher::new(),
        }
    }

    /// Ends the stream (failing on truncation) and returns the inner writer with what was
    /// decrypted. Callers must still [`Decrypted::verify`] it.
    pub fn finish(mut self) -> Result<(W, Decrypted), CryptoError> {
        self.decoder.finish()?;
        self.inner.flush().map_err(|_| CryptoError::Backend)?;
        Ok((
            self.inner,
            Decrypted {
                size: self.size,
                md5: self.md5.finish_hex(),
            },
        ))
    }
}

impl<W: Write> Write for DecryptingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Self {
            inner,
            decoder,
            size,
            md5,
        } = self;
        decoder.update(buf, &mut |plain: &[u8]| -> io::Result<()> {
            md5.update(plain);
            *size += plain.len() as u64;
            inner.write_all(plain)
        })?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl From<CryptoError> for io::Error {
    fn from(e: CryptoError) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// The [`CryptoError`] inside an I/O error from a [`DecryptingWriter`], or `Backend` when the
/// inner writer itself failed.
pub fn crypto_error_of(error: &io::Error) -> CryptoError {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<CryptoError>())
        .copied()
        .unwrap_or(CryptoError::Backend)
}

/// Decrypts a whole stream held in memory and checks it against the announced size and MD5.
pub fn decrypt_all(
    key: &SessionKey,
    stream: &[u8],
    expected_size: u64,
    expected_md5: &str,
) -> Result<Vec<u8>, CryptoError> {
    let mut writer = DecryptingWriter::new(Vec::new(), key);
    writer.write_all(stream).map_err(|e| crypto_error_of(&e))?;
    let (plain, decrypted) = writer.finish()?;
    decrypted.verify(expected_size, expected_md5)?;
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::crypto::md5_hex;

    fn key() -> SessionKey {
        SessionKey::from_bytes([7; 32])
    }

    fn frames_of(stream: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut rest = stream;
        while !rest.is_empty() {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            out.push(rest[..4 + len].to_vec());
            rest = &rest[4 + len..];
        }
        out
    }

    fn decode_in_chunks(stream: &[u8], chunk: usize) -> Result<(Vec<u8>, Decrypted), CryptoError> {
        let mut writer = DecryptingWriter::new(Vec::new(), &key());
        for piece in stream.chunks(chunk.max(1)) {
            writer.write_all(piece).map_err(|e| crypto_error_of(&e))?;
        }
        writer.finish()
    }

    #[test]
    fn frame_layout_matches_the_protocol() {
        let stream = FrameSealer::new(&key()).seal(b"hello").unwrap();
        assert_eq!(stream.len(), 4 + 12 + 16 + 5);
        assert_eq!(&stream[..4], &(12u32 + 16 + 5).to_be_bytes());
    }

    #[test]
    fn server_frames_hold_64_kib() {
        let data = vec![1u8; FRAME_PLAINTEXT * 2 + 10];
        let frames = frames_of(&encrypt_all(&key(), &data).unwrap());
        let sizes: Vec<usize> = frames.iter().map(|f| f.len() - FRAME_OVERHEAD).collect();
        assert_eq!(sizes, [FRAME_PLAINTEXT, FRAME_PLAINTEXT, 10]);
    }

    #[test]
    fn reader_and_one_shot_produce_the_same_plaintext() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut stream = Vec::new();
        EncryptingReader::new(data.as_slice(), &key())
            .read_to_end(&mut stream)
            .unwrap();
        let plain = decrypt_all(&key(), &stream, data.len() as u64, &md5_hex(&data)).unwrap();
        assert_eq!(plain, data);
    }

    #[test]
    fn empty_input_is_an_empty_stream() {
        assert!(encrypt_all(&key(), b"").unwrap().is_empty());
        let plain = decrypt_all(&key(), b"", 0, &md5_hex(b"")).unwrap();
        assert!(plain.is_empty());
    }

    #[test]
    fn oversized_or_undersized_length_fields_are_rejected() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&27u32.to_be_bytes());
        stream.extend_from_slice(&[0; 27]);
        assert!(decode_in_chunks(&stream, 100).is_err());
        let huge = u32::MAX.to_be_bytes();
        assert_eq!(
            decode_in_chunks(&huge, 4).unwrap_err(),
            CryptoError::Corrupt("frame length out of range")
        );
    }

    #[test]
    fn wrong_key_fails_authentication() {
        let stream = encrypt_all(&key(), b"secret").unwrap();
        let other = SessionKey::from_bytes([8; 32]);
        assert_eq!(
            decrypt_all(&other, &stream, 6, &md5_hex(b"secret")).unwrap_err(),
            CryptoError::Corrupt("frame failed authentication")
        );
    }

    fn data_strategy() -> impl Strategy<Value = Vec<u8>> {
        // Up to a few frames; the frame size is fixed, so use a small-frame variant too.
        prop::collection::vec(any::<u8>(), 0..(FRAME_PLAINTEXT * 3 + 7))
    }

    /// Seals `data` with a small frame size so that short inputs still make many frames.
    fn encrypt_small_frames(data: &[u8], frame: usize) -> Vec<u8> {
        let sealer = FrameSealer::new(&key());
        let mut out = Vec::new();
        for chunk in data.chunks(frame) {
            sealer.seal_into(chunk, &mut out).unwrap();
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn roundtrip_over_any_chunking(data in data_strategy(), chunk in 1usize..100_000) {
            let stream = encrypt_all(&key(), &data).unwrap();
            let (plain, decrypted) = decode_in_chunks(&stream, chunk).unwrap();
            prop_assert_eq!(&plain, &data);
            prop_assert!(decrypted.verify(data.len() as u64, &md5_hex(&data)).is_ok());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn flipped_bits_are_rejected(
            data in prop::collection::vec(any::<u8>(), 1..2000),
            frame in 1usize..300,
            pos in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let mut stream = encrypt_small_frames(&data, frame);
            let i = pos.index(stream.len());
            stream[i] ^= 1 << bit;
            let result = decrypt_all(&key(), &stream, data.len() as u64, &md5_hex(&data));
            prop_assert!(result.is_err());
        }

        #[test]
        fn dropped_reordered_or_duplicated_frames_are_rejected(
            data in prop::collection::vec(any::<u8>(), 2..2000),
            frame in 1usize..300,
            a in any::<prop::sample::Index>(),
            b in any::<prop::sample::Index>(),
            how in 0u8..3,
        ) {
            let frame = frame.min(data.len() - 1).max(1);
            let mut frames = frames_of(&encrypt_small_frames(&data, frame));
            prop_assume!(frames.len() >= 2);
            let i = a.index(frames.len());
            let j = b.index(frames.len());
            match how {
                0 => { frames.remove(i); }
                1 => {
                    // Swapping frames of different content changes the checksum (or size).
                    prop_assume!(
                        data.chunks(frame).nth(i) != data.chunks(frame).nth(j)
                    );
                    frames.swap(i, j);
                }
                _ => { let f = frames[i].clone(); frames.insert(j, f); }
            }
            let stream: Vec<u8> = frames.concat();
            let result = decrypt_all(&key(), &stream, data.len() as u64, &md5_hex(&data));
            prop_assert!(result.is_err());
        }

        #[test]
        fn truncation_anywhere_is_rejected(
            data in prop::collection::vec(any::<u8>(), 1..2000),
            frame in 1usize..300,
            cut in any::<prop::sample::Index>(),
        ) {
            let stream = encrypt_small_frames(&data, frame);
            let keep = cut.index(stream.len());
            let result = decrypt_all(&key(), &stream[..keep], data.len() as u64, &md5_hex(&data));
            prop_assert!(result.is_err());
        }
    }
}
