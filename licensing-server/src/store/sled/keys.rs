//! Key layout of the sled tree. Every key starts with a one-byte table tag, then the team id, so a
//! team's records of one kind are one contiguous range and no key of one team is a prefix of
//! another team's. Sort keys encode numbers big-endian with the sign bit flipped, so byte order is
//! numeric order.

use licensing_core::Timestamp;

/// Table tags.
pub(crate) mod tag {
    pub(crate) const TEAM: u8 = b'T';
    pub(crate) const API_KEY: u8 = b'K';
    pub(crate) const TEAM_API_KEY: u8 = b'k';
    pub(crate) const LICENSE: u8 = b'L';
    pub(crate) const LICENSE_KEY: u8 = b'l';
    pub(crate) const CUSTOMER: u8 = b'C';
    pub(crate) const PRODUCT: u8 = b'P';
    pub(crate) const BRANCH: u8 = b'B';
    pub(crate) const RELEASE: u8 = b'R';
    pub(crate) const HWID: u8 = b'H';
    pub(crate) const IP: u8 = b'I';
    pub(crate) const BLACKLIST: u8 = b'X';
    pub(crate) const STATS: u8 = b'S';
    pub(crate) const OUTBOX: u8 = b'O';
    pub(crate) const MAIL_DAY: u8 = b'M';
    pub(crate) const INDEX: u8 = b'i';
    pub(crate) const COUNT: u8 = b'#';
    pub(crate) const META: u8 = b'm';
    pub(crate) const SESSION_KEY: u8 = b's';
    pub(crate) const AUDIT: u8 = b'A';
    pub(crate) const WEBHOOK: u8 = b'W';
    pub(crate) const EVENT: u8 = b'E';
    pub(crate) const DELIVERY: u8 = b'D';
    /// A license's mark of a raised client event (`license.expired`: its expiration date).
    pub(crate) const EVENT_MARK: u8 = b'e';
    /// A staff account, by id.
    pub(crate) const STAFF: u8 = b'U';
    /// A staff account's id, by its lower-cased e-mail address.
    pub(crate) const STAFF_EMAIL: u8 = b'u';
    /// A team's staff accounts (empty values).
    pub(crate) const TEAM_STAFF: u8 = b'V';
    /// A signed-in session, by the hash of its cookie.
    pub(crate) const WEB_SESSION: u8 = b'G';
    /// An account's sessions (empty values).
    pub(crate) const STAFF_WEB_SESSION: u8 = b'g';
    /// A license's device and address records by when they were last seen (`seen.rs`).
    pub(crate) const SEEN: u8 = b'z';
    /// An entitlement, by team and id.
    pub(crate) const ENTITLEMENT: u8 = b'N';
    /// A policy, by team and id.
    pub(crate) const POLICY: u8 = b'p';
    /// A floating session, by team, license and id (`floating.rs`).
    pub(crate) const FLOATING: u8 = b'F';
    /// An idempotency key and its kept answer, by owner and key, in stores written before kept
    /// answers were kept apart; moved under [`KEPT`] at open (`idempotency.rs`).
    pub(crate) const IDEMPOTENCY: u8 = b'Y';
    /// The mark of an idempotency claim whose write is applied, by the day of the claim and
    /// its name (`idempotency.rs`); its answer is in the kept answers' files
    /// (`kept_files.rs`). The previous store kept the answer here too.
    pub(crate) const KEPT: u8 = b'J';
    /// A license's request history, by team, license, time and a sequence number
    /// (`request_log.rs`).
    pub(crate) const REQUEST_LOG: u8 = b'Q';
    /// (ext) A payment integration, by team and provider (`payments.rs`).
    pub(crate) const INTEGRATION: u8 = b'n';
    /// (ext) A received payment event, by team and id; under [`INDEX`] by time for pruning.
    pub(crate) const INBOUND: u8 = b'Z';
    /// (ext) The delivery that applied a provider's event, by team, provider and event id.
    pub(crate) const INBOUND_APPLIED: u8 = b'a';
    /// (ext) The license of a provider's subscription or payment, by team, provider and id.
    pub(crate) const PAYMENT_LINK: u8 = b'q';
    /// (ext) A customer portal sign-in ticket, by the hash of its link's token (`portal.rs`).
    pub(crate) const PORTAL_TICKET: u8 = b't';
    /// (ext) A ticket's token hash, by team and the ticket's public id (its code form's).
    pub(crate) const PORTAL_TICKET_ID: u8 = b'v';
    /// (ext) A customer portal session, by the hash of its cookie.
    pub(crate) const PORTAL_SESSION: u8 = b'w';
    /// (ext) The times of a license's self-service resets in the current period, by team and
    /// license.
    pub(crate) const RESETS: u8 = b'r';
    /// (ext) Usage counters, by team, license, meter code and period start.
    pub(crate) const USAGE: u8 = b'c';
    /// (ext) Kept answers of usage events, by team, license and event id.
    pub(crate) const USAGE_ANSWER: u8 = b'x';
}

/// Builds a key from parts.
pub(crate) fn key(parts: &[&[u8]]) -> Vec<u8> {
    let mut k = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        k.extend_from_slice(p);
    }
    k
}

/// Order-preserving bytes of a timestamp.
pub(crate) fn time(at: Timestamp) -> [u8; 8] {
    ((at.as_millis() as u64) ^ (1 << 63)).to_be_bytes()
}

/// Order-preserving bytes of an optional timestamp; `None` sorts first.
pub(crate) fn opt_time(at: Option<Timestamp>) -> [u8; 8] {
    at.map_or([0; 8], time)
}

/// Order-preserving bytes of an hour number.
pub(crate) fn hour(h: i64) -> [u8; 8] {
    ((h as u64) ^ (1 << 63)).to_be_bytes()
}

/// Lower-cased text for a sort index, terminated so that a shorter text sorts before its
/// extensions (`"ab" < "abc"`). Names hold no control characters, so 0 cannot occur inside.
pub(crate) fn text(value: Option<&str>) -> Vec<u8> {
    let mut v = value
        .map(str::to_lowercase)
        .unwrap_or_default()
        .into_bytes();
    v.push(0);
    v
}

/// The smallest key greater than every key starting with `prefix`.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0xff; prefix.len() + 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sort_numerically_including_negative() {
        let a = time(Timestamp::from_millis(-5));
        let b = time(Timestamp::from_millis(0));
        let c = time(Timestamp::from_millis(1_000));
        assert!(a < b && b < c);
        assert!(opt_time(None) < a);
    }

    #[test]
    fn text_keys_sort_prefixes_first() {
        assert!(text(Some("ab")) < text(Some("abc")));
        assert!(text(Some("AB")) == text(Some("ab")));
        assert!(text(None) < text(Some("a")));
    }

    #[test]
    fn prefix_end_is_past_every_extension() {
        assert_eq!(prefix_end(&[1, 2]), vec![1, 3]);
        assert_eq!(prefix_end(&[1, 0xff]), vec![2]);
        assert!(prefix_end(b"ab").as_slice() > b"ab\xff\xff".as_slice());
    }
}
