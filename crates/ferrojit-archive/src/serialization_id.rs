//! The `.data/serialization_id` record of the files ferrojit writes. PyTorch writes 40
//! random decimal digits; ferrojit derives them from a hash of the file's content, so saving
//! the same thing twice gives the same bytes (no jitter) and different content a different id.

/// FNV-1a over the bytes fed to it: tiny and stable across builds and platforms (not for
/// security: the id only has to tell files apart).
#[derive(Debug, Clone)]
pub struct ContentHash(u64);

impl Default for ContentHash {
    fn default() -> Self {
        ContentHash::new()
    }
}

impl ContentHash {
    pub fn new() -> ContentHash {
        ContentHash(0xcbf2_9ce4_8422_2325)
    }

    pub fn update(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    pub fn finish(&self) -> u64 {
        self.0
    }

    /// The 40 decimal digits PyTorch's id has, made from the hash so far.
    pub fn serialization_id(&self) -> String {
        let hash = self.finish();
        format!("{hash:020}{:020}", hash.rotate_left(32))
    }
}

#[cfg(test)]
mod tests {
    use super::ContentHash;

    #[test]
    fn the_id_has_forty_digits_and_follows_the_content() {
        let mut first = ContentHash::new();
        first.update(b"data.pkl");
        let mut same = ContentHash::new();
        same.update(b"data.pkl");
        let mut other = ContentHash::new();
        other.update(b"data.pkm");
        let id = first.serialization_id();
        assert_eq!(id.len(), 40);
        assert!(id.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(id, same.serialization_id());
        assert_ne!(id, other.serialization_id());
        // FNV-1a's published value for the empty input.
        assert_eq!(ContentHash::new().finish(), 0xcbf2_9ce4_8422_2325);
    }
}
