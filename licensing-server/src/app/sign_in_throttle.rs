//! How hard a sign-in may be guessed at: a browser that signed in to the account before is held
//! back by its own failures alone (nobody else's can lock the account's people out); anyone
//! else by the client address, the account name from that address, and the account name from
//! every such browser together. A signed-in session checking its password again is held back by
//! its own wrong guesses.

use std::net::IpAddr;

use licensing_core::StaffId;

use crate::runtime::ratelimit::{RateStatus, ip_key};
use crate::state::Limits;

/// A digest that keys a sign-in limiter: `kind`, then each part, each ended by a newline.
pub(crate) fn limit_key(kind: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update(kind);
    for part in parts {
        hasher.update(b"\n");
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Whom a failed sign-in counts against.
pub(crate) enum Guesser {
    /// A browser that signed in to the account before: only its own failures hold it back,
    /// so that nobody else's can lock the account's people out.
    Known([u8; 32]),
    /// Anyone else: the client address, the account name from that address, and the account
    /// name from every such browser together.
    Unknown {
        address: u128,
        from_address: [u8; 32],
        account: [u8; 32],
    },
}

impl Guesser {
    /// Who tries to sign in to account `email` from `client`, with the device cookie of an
    /// earlier sign-in to it (its account and nonce) when the browser has one.
    pub(crate) fn of(client: IpAddr, email: &str, device: Option<(StaffId, [u8; 16])>) -> Self {
        if let Some((user, nonce)) = device {
            return Self::Known(limit_key(b"device", &[user.as_bytes(), &nonce]));
        }
        let name = email.trim().to_lowercase();
        let address = ip_key(client);
        Self::Unknown {
            address,
            from_address: limit_key(b"address", &[name.as_bytes(), &address.to_be_bytes()]),
            account: limit_key(b"account", &[name.as_bytes()]),
        }
    }

    /// A signed-in session checking its password again (to change it, say): only its own
    /// wrong guesses hold it back.
    pub(crate) fn session(id_sha256: &[u8]) -> Self {
        Self::Known(limit_key(b"session", &[id_sha256]))
    }

    /// The first limit this guesser has passed, if any.
    pub(crate) async fn throttled(&self, limits: &Limits) -> Option<RateStatus> {
        let (own, account) = match self {
            Self::Known(key) => (key, None),
            Self::Unknown {
                address,
                from_address,
                account,
            } => {
                if let Some(limiter) = &limits.auth_failures
                    && let Some(status) = limiter.blocked(address).await
                {
                    return Some(status);
                }
                (from_address, Some(account))
            }
        };
        for limiter in &limits.sign_in_account {
            if let Some(status) = limiter.blocked(own).await {
                return Some(status);
            }
        }
        if let Some(account) = account {
            for limiter in &limits.sign_in_total {
                if let Some(status) = limiter.blocked(account).await {
                    return Some(status);
                }
            }
        }
        None
    }

    /// Counts a failure against every limit of this guesser.
    pub(crate) async fn failed(&self, limits: &Limits) {
        let own = match self {
            Self::Known(key) => key,
            Self::Unknown {
                address,
                from_address,
                account,
            } => {
                if let Some(limiter) = &limits.auth_failures {
                    limiter.check(address).await;
                }
                for limiter in &limits.sign_in_total {
                    limiter.check(account).await;
                }
                from_address
            }
        };
        for limiter in &limits.sign_in_account {
            limiter.check(own).await;
        }
    }
}
