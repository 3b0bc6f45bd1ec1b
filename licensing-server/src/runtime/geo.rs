//! The country of a client IP: from a MaxMind-format database when one is configured, else from
//! the regional registries' delegation data embedded in the server (the `iptocc` crate), so that
//! country statistics and country blacklists work with no configuration at all.

use std::net::IpAddr;
use std::path::Path;

use licensing_core::validate::Country;
use serde::Deserialize;

/// Where countries come from.
pub enum Geo {
    /// The embedded registry data.
    Embedded,
    /// A `.mmdb` file, read into memory once.
    Mmdb(Box<maxminddb::Reader<Vec<u8>>>),
}

impl std::fmt::Debug for Geo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Embedded => f.write_str("Geo::Embedded"),
            Self::Mmdb(reader) => write!(f, "Geo::Mmdb({})", reader.metadata().database_type),
        }
    }
}

/// The members of a database record that name a country. GeoIP2/GeoLite2 databases use
/// `country.iso_code` (and `registered_country` for anycast and the like); ip-location-db's
/// databases use a flat `country_code`.
#[derive(Deserialize)]
struct CountryRecord<'a> {
    #[serde(borrow, default)]
    country: Option<IsoCode<'a>>,
    #[serde(borrow, default)]
    registered_country: Option<IsoCode<'a>>,
    #[serde(borrow, default)]
    country_code: Option<&'a str>,
}

#[derive(Deserialize)]
struct IsoCode<'a> {
    #[serde(borrow, default)]
    iso_code: Option<&'a str>,
}

impl Geo {
    /// Opens a `.mmdb` database, checking that it can be read.
    pub fn open(path: &Path) -> Result<Self, String> {
        let reader = maxminddb::Reader::open_readfile(path)
            .map_err(|e| format!("cannot read the country database {}: {e}", path.display()))?;
        Ok(Self::Mmdb(Box::new(reader)))
    }

    /// The country of `ip`, when known. Private, loopback and unallocated addresses have none.
    pub fn country(&self, ip: IpAddr) -> Option<Country> {
        let ip = ip.to_canonical();
        let code = match self {
            Self::Embedded => iptocc::country_code(ip)?,
            Self::Mmdb(reader) => return Self::mmdb_country(reader, ip),
        };
        Country::from_code(code).ok()
    }

    fn mmdb_country(reader: &maxminddb::Reader<Vec<u8>>, ip: IpAddr) -> Option<Country> {
        let found = reader.lookup(ip).ok()?;
        let record: CountryRecord<'_> = found.decode().ok()??;
        let code = record
            .country
            .and_then(|c| c.iso_code)
            .or(record.country_code)
            .or(record.registered_country.and_then(|c| c.iso_code))?;
        Country::from_code(code).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_data_knows_public_addresses_and_not_private_ones() {
        let geo = Geo::Embedded;
        // 8.8.8.8 and 2001:4860:4860::8888 are Google's (ARIN); 193.166.0.0/15 is FUNET
        // (Finland, RIPE), also as IPv4-mapped IPv6, which is looked up as IPv4; 130.237.0.0/16
        // is KTH (Sweden).
        assert_countries(
            &geo,
            &[
                ("8.8.8.8", "US", "USA"),
                ("2001:4860:4860::8888", "US", "USA"),
                ("193.166.3.2", "FI", "FIN"),
                ("::ffff:193.166.3.2", "FI", "FIN"),
                ("130.237.1.1", "SE", "SWE"),
            ],
        );
        assert!(geo.country("127.0.0.1".parse().unwrap()).is_none());
        assert!(geo.country("10.1.2.3".parse().unwrap()).is_none());
        assert!(geo.country("::1".parse().unwrap()).is_none());
    }
}

/// Asserts that `geo` places each address in its country (alpha-2 and alpha-3 codes).
#[cfg(test)]
fn assert_countries(geo: &Geo, cases: &[(&str, &str, &str)]) {
    for (address, alpha2, alpha3) in cases {
        let country = geo.country(address.parse().unwrap()).unwrap();
        assert_eq!(
            (country.alpha2, country.alpha3),
            (*alpha2, *alpha3),
            "{address}"
        );
    }
}

#[cfg(test)]
mod mmdb_tests {
    use super::*;

    #[test]
    fn a_real_mmdb_country_database_is_read() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/geo-whois-asn-country-ipv4.mmdb");
        let geo = Geo::open(&path).unwrap();
        assert_countries(
            &geo,
            &[
                ("8.8.8.8", "US", "USA"),
                ("193.166.3.2", "FI", "FIN"),
                ("::ffff:193.166.3.2", "FI", "FIN"),
            ],
        );
        assert!(geo.country("10.0.0.1".parse().unwrap()).is_none());
        // An IPv4-only database knows no IPv6 addresses.
        assert!(
            geo.country("2001:4860:4860::8888".parse().unwrap())
                .is_none()
        );
        assert!(Geo::open(Path::new("/nonexistent.mmdb")).is_err());
    }
}
