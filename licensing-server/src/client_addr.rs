//! The client's address (protocol.md section 3), decided once per request at the connection and
//! used for everything that depends on it: IP limits, blacklists, countries, rate limits, the
//! classloader and the access log.
//!
//! The address is the socket's peer, unless the peer is a trusted proxy. Then the
//! `X-Forwarded-For` entries are read **from right to left**: each proxy appends the address it
//! received the request from, so the rightmost entries were written by proxies we trust and the
//! leftmost by whoever sent the request first, who may write anything there. The walk skips every
//! entry that is itself a trusted proxy; the first untrusted entry is the client. When every entry
//! is trusted, the leftmost is the client. An entry that does not parse as an address (`unknown`,
//! garbage, an empty entry) stops the walk at the last good address, which is then a trusted proxy
//! (or the peer itself).
//!
//! Several `X-Forwarded-For` header lines are one list, in order (RFC 9110, section 5.3).

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use warp::http::HeaderMap;

/// The proxies whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies {
    nets: std::sync::Arc<[IpNet]>,
}

impl TrustedProxies {
    /// Trusts these addresses and ranges (none: the peer is always the client).
    pub fn new(nets: impl Into<Vec<IpNet>>) -> Self {
        let nets: Vec<IpNet> = nets.into();
        Self { nets: nets.into() }
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// Whether `ip` is a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.nets.iter().any(|net| net.contains(&ip))
    }

    /// The client's address for a request from `peer` with `headers`. Allocates nothing.
    pub fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return peer;
        }
        let mut client = peer;
        // Entries are split as bytes, not as text: a byte that is not ASCII (which proxies such
        // as nginx pass through) spoils only the entry it is in, and an entry left of it never
        // decides the address of one written right of it by a proxy.
        for line in headers.get_all("x-forwarded-for").iter().rev() {
            for entry in line.as_bytes().rsplit(|&b| b == b',') {
                let Some(ip) = std::str::from_utf8(entry).ok().and_then(parse_entry) else {
                    return client;
                };
                client = ip;
                if !self.trusts(ip) {
                    return ip;
                }
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an IPv4 or IPv6 address, optionally with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:443`), IPv6 optionally in brackets. IPv4-mapped IPv6 counts as IPv4.
pub fn parse_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Some(inner) = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')) {
        return inner.parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    }
    entry
        .parse::<SocketAddr>()
        .ok()
        .map(|addr| addr.ip().to_canonical())
}

#[cfg(test)]
mod tests {
    use warp::http::HeaderValue;

    use super::*;

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::new(
            list.iter()
                .map(|n| licensing_core::verify::parse_ip_or_net(n).unwrap())
                .collect::<Vec<_>>(),
        )
    }

    fn headers(lines: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for line in lines {
            map.append("x-forwarded-for", HeaderValue::from_str(line).unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// Trusted proxies, the peer, the header lines, the client it must be, and why.
    type Case = (
        &'static [&'static str],
        &'static str,
        &'static [&'static str],
        &'static str,
        &'static str,
    );

    #[test]
    fn the_client_is_the_first_untrusted_entry_from_the_right() {
        let cases: &[Case] = &[
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["198.51.100.7"],
                "198.51.100.7",
                "one proxy",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["1.2.3.4, 198.51.100.7"],
                "198.51.100.7",
                "a spoofed leftmost entry is ignored",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["1.2.3.4", "198.51.100.7"],
                "198.51.100.7",
                "several header lines are one list",
            ),
            (
                &["10.0.0.0/8", "192.0.2.0/24"],
                "10.0.0.1",
                &["1.2.3.4, 198.51.100.7, 192.0.2.9, 10.0.0.2"],
                "198.51.100.7",
                "a chain of trusted proxies is skipped",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["10.0.0.3, 10.0.0.2"],
                "10.0.0.3",
                "all trusted: the leftmost",
            ),
            (
                &["10.0.0.0/8"],
                "203.0.113.5",
                &["198.51.100.7"],
                "203.0.113.5",
                "from an untrusted peer the header is ignored",
            ),
            (
                &[],
                "127.0.0.1",
                &["198.51.100.7"],
                "127.0.0.1",
                "no proxy trusted",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["198.51.100.7, garbage"],
                "10.0.0.1",
                "garbage at the right stops the walk at the peer",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["198.51.100.7, unknown, 10.0.0.2"],
                "10.0.0.2",
                "garbage stops the walk at the last good (trusted) entry",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["198.51.100.7,"],
                "10.0.0.1",
                "an empty entry is garbage",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &[],
                "10.0.0.1",
                "no header: the peer",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["2001:db8::7"],
                "2001:db8::7",
                "IPv6",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["[2001:db8::7]"],
                "2001:db8::7",
                "IPv6 in brackets",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["[2001:db8::7]:4711"],
                "2001:db8::7",
                "IPv6 with a port",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["198.51.100.7:4711"],
                "198.51.100.7",
                "IPv4 with a port",
            ),
            (
                &["10.0.0.0/8"],
                "10.0.0.1",
                &["::ffff:198.51.100.7"],
                "198.51.100.7",
                "IPv4-mapped IPv6 is IPv4",
            ),
            (
                &["::1/128", "fd00::/8"],
                "::1",
                &["203.0.113.1, [fd00::2]:80"],
                "203.0.113.1",
                "IPv6 proxies",
            ),
            (
                &["10.0.0.0/8"],
                "::ffff:10.0.0.1",
                &["198.51.100.7"],
                "198.51.100.7",
                "a peer in IPv4-mapped form is matched as IPv4",
            ),
        ];
        for (trusted, peer, lines, client, why) in cases {
            assert_eq!(
                proxies(trusted).client_ip(ip(peer), &headers(lines)),
                ip(client),
                "{why}"
            );
        }
    }

    /// Header lines as raw bytes, the client it must be, and why.
    type ByteCase = (&'static [&'static [u8]], &'static str, &'static str);

    #[test]
    fn bytes_that_are_not_text_spoil_only_their_own_entry() {
        let cases: &[ByteCase] = &[
            (
                &[b"\xff, 198.51.100.7"],
                "198.51.100.7",
                "a non-ASCII entry left of the proxy's is never reached",
            ),
            (
                &[b"\xff\xfe", b"198.51.100.7"],
                "198.51.100.7",
                "a line that is not text, before the proxy's line",
            ),
            (
                &[b"198.51.100.7, \xff"],
                "10.0.0.1",
                "a non-ASCII rightmost entry stops the walk at the peer",
            ),
            (
                &[b"198.51.100.7", b"\xff\xfe"],
                "10.0.0.1",
                "a rightmost line that is not text stops the walk at the peer",
            ),
            (
                &[b"203.0.113.1\xff, 10.0.0.2, 198.51.100.7"],
                "198.51.100.7",
                "a non-ASCII byte far left changes nothing",
            ),
            (
                &[b"198.51.100.7, 10.0.0.2\xff, 10.0.0.3"],
                "10.0.0.3",
                "a non-ASCII trusted entry stops the walk at the last good one",
            ),
            (
                &[b",, 198.51.100.7"],
                "198.51.100.7",
                "lone commas left of the proxy's entry",
            ),
            (&[b","], "10.0.0.1", "a lone comma: the peer"),
        ];
        for (lines, client, why) in cases {
            let mut map = HeaderMap::new();
            for line in *lines {
                map.append("x-forwarded-for", HeaderValue::from_bytes(line).unwrap());
            }
            assert_eq!(
                proxies(&["10.0.0.0/8"]).client_ip(ip("10.0.0.1"), &map),
                ip(client),
                "{why}"
            );
        }
    }
}
