//! A team's blacklist, compiled for matching: IP addresses and ranges, countries, hardware
//! identifiers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::Denial;
use crate::BlacklistId;
use crate::code::ResultCode;
use crate::model::{BlacklistEntry, BlacklistType};
use crate::validate::{Country, HardwareId};

/// The team's blacklist, compiled for matching.
#[derive(Clone, Debug, Default)]
pub struct Blacklist {
    nets: Vec<(IpNet, BlacklistId)>,
    countries: HashMap<&'static str, BlacklistId>,
    hwids: HashMap<String, BlacklistId>,
}

impl Blacklist {
    /// Compiles stored entries; entries whose value does not parse (none should) are skipped.
    pub fn compile(entries: &[BlacklistEntry]) -> Self {
        let mut list = Self::default();
        for e in entries {
            match e.kind {
                BlacklistType::Ip => {
                    if let Ok(net) = parse_ip_or_net(&e.value) {
                        list.nets.push((net, e.id));
                    }
                }
                BlacklistType::Country => {
                    if let Ok(c) = Country::from_code(&e.value) {
                        list.countries.insert(c.alpha2, e.id);
                    }
                }
                BlacklistType::HardwareIdentifier => {
                    list.hwids.insert(e.value.clone(), e.id);
                }
            }
        }
        list
    }

    /// Step 3: IP (exact or CIDR), then country, then hardware identifier.
    pub fn check(
        &self,
        ip: IpAddr,
        country: Option<Country>,
        hwid: Option<&HardwareId>,
    ) -> Result<(), Denial> {
        let ip = ip.to_canonical();
        if let Some((_, id)) = self.nets.iter().find(|(net, _)| net.contains(&ip)) {
            return Err(Self::hit(
                ResultCode::IpBlacklisted,
                "IP address is blacklisted",
                *id,
            ));
        }
        if let Some(id) = country.and_then(|c| self.countries.get(c.alpha2)) {
            return Err(Self::hit(
                ResultCode::CountryBlacklisted,
                "Country is blacklisted",
                *id,
            ));
        }
        if let Some(id) = hwid.and_then(|h| self.hwids.get(h.as_str())) {
            return Err(Self::hit(
                ResultCode::HardwareIdentifierBlacklisted,
                "Hardware identifier is blacklisted",
                *id,
            ));
        }
        Ok(())
    }

    fn hit(code: ResultCode, details: &'static str, id: BlacklistId) -> Denial {
        Denial {
            code,
            details: Cow::Borrowed(details),
            blacklist_hit: Some(id),
        }
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty() && self.countries.is_empty() && self.hwids.is_empty()
    }
}

/// Parses an IP address (as a single-address network) or a CIDR range, normalized.
pub fn parse_ip_or_net(text: &str) -> Result<IpNet, String> {
    if let Ok(addr) = text.parse::<IpAddr>() {
        return Ok(IpNet::from(addr.to_canonical()));
    }
    text.parse::<IpNet>().map(|net| net.trunc()).map_err(|_| {
        "must be an IP address or a CIDR range, such as 203.0.113.7 or 2001:db8::/32".into()
    })
}
