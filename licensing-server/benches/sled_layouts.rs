//! What two layouts of a license's devices cost sled on disk:
//! `cargo bench -p licensing-server --bench sled_layouts`.
//!
//! A sled database alone (no store, no server), holding what the load benchmark's data set holds
//! of licenses and their usage: 100,000 licenses (`LAYOUT_BENCH_LICENSES` to change), each with
//! a record, an entry by key, four index entries, and ten devices and ten addresses added one at
//! a time, the licenses interleaved (as 64 clients would add them). Then two rounds of refreshes,
//! each of a quarter of the devices picked at random (a heartbeat writes its device's and
//! address's last use). Printed after seeding and after each round: the database's files, and
//! its entries. `LAYOUT_BENCH_SEGMENT` sets sled's segment size (a power of two; sled's default
//! is 512 KiB).
//!
//! - `rows`, the store's layout: a device record (88 bytes) and an address record (72 bytes),
//!   each with an empty entry by last use, and two counts per license.
//! - `blocks`: one value per license for its devices and one for its addresses, each holding
//!   all its records (rewritten whole when one changes).
//!
//! The store flushes before each durable answer; this program leaves flushing to sled (every
//! 500 ms), so its files are smaller than the store's for the same entries. It compares the two
//! layouts under the same writes; the store's own figures come from the load benchmark's
//! `--space`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

const DEVICES: usize = 10;
const DEVICE_BYTES: usize = 88;
const ADDRESS_BYTES: usize = 72;
/// What a record carries in a block beyond its value: its identifier's digest.
const IN_BLOCK: usize = 16;
const TEAM: [u8; 16] = [7; 16];

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A deterministic stream of 16-byte ids (splitmix64).
struct Ids(u64);

impl Ids {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn id(&mut self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        out[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        out
    }
}

fn files(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                files(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Rows,
    Blocks,
}

struct Data {
    layout: Layout,
    db: sled::Db,
    licenses: Vec<[u8; 16]>,
    devices: Vec<[[u8; 16]; DEVICES]>,
    /// Each device's last use as written (its address's too), 0 before its first.
    last: Vec<[u64; DEVICES]>,
    /// The blocks as written, for `Blocks`.
    blocks: Vec<[Vec<u8>; 2]>,
}

impl Data {
    /// Writes that device `d` of license `l` was used at `now`, in one batch.
    fn touch(&mut self, l: usize, d: usize, now: u64) {
        let (license, device) = (self.licenses[l], self.devices[l][d]);
        let mut batch = sled::Batch::default();
        let tables = [(b'H', DEVICE_BYTES), (b'P', ADDRESS_BYTES)];
        match self.layout {
            Layout::Rows => {
                for (table, size) in tables {
                    let mut value = vec![3; size];
                    value[..8].copy_from_slice(&now.to_be_bytes());
                    batch.insert([&[table][..], &TEAM, &license, &device].concat(), value);
                    let entry = |at: u64| {
                        [
                            &b"z"[..],
                            &[table],
                            &TEAM,
                            &license,
                            &[0],
                            &at.to_be_bytes(),
                            &device,
                        ]
                        .concat()
                    };
                    if self.last[l][d] != 0 {
                        batch.remove(entry(self.last[l][d]));
                    }
                    batch.insert(entry(now), Vec::new());
                }
            }
            Layout::Blocks => {
                for (t, (table, size)) in tables.into_iter().enumerate() {
                    let size = size + IN_BLOCK;
                    let block = &mut self.blocks[l][t];
                    if block.len() < (d + 1) * size {
                        block.resize((d + 1) * size, 3);
                    }
                    block[d * size..d * size + 8].copy_from_slice(&now.to_be_bytes());
                    batch.insert([&[table][..], &TEAM, &license].concat(), block.clone());
                }
            }
        }
        self.db.apply_batch(batch).unwrap();
        self.last[l][d] = now;
    }
}

fn run(layout: Layout, name: &str, licenses: usize, segment: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = sled::Config::new()
        .path(dir.path())
        .cache_capacity(256 << 20);
    if segment > 0 {
        config = config.segment_size(segment);
    }
    let mut ids = Ids(1);
    let mut data = Data {
        layout,
        db: config.open().unwrap(),
        licenses: (0..licenses).map(|_| ids.id()).collect(),
        devices: (0..licenses)
            .map(|_| std::array::from_fn(|_| ids.id()))
            .collect(),
        last: vec![[0; DEVICES]; licenses],
        blocks: vec![[Vec::new(), Vec::new()]; licenses],
    };
    let started = Instant::now();
    for (i, license) in data.licenses.iter().enumerate() {
        let mut batch = sled::Batch::default();
        batch.insert([&b"L"[..], &TEAM, license].concat(), vec![1; 150]);
        batch.insert(
            [&b"K"[..], &TEAM, &(i as u64).to_be_bytes(), &[0; 12]].concat(),
            license.to_vec(),
        );
        for index in 0..4u8 {
            let at = (i as u64 ^ 0x55).to_be_bytes();
            batch.insert(
                [&b"I"[..], &[index], &TEAM, &at, license].concat(),
                Vec::new(),
            );
        }
        if layout == Layout::Rows {
            for count in 0..2u8 {
                batch.insert([&b"C"[..], &[count], &TEAM, license].concat(), vec![0; 16]);
            }
        }
        data.db.apply_batch(batch).unwrap();
    }
    // Each license's first device, then each one's second, and so on, the licenses shuffled.
    let mut order: Vec<(usize, usize)> = (0..licenses)
        .flat_map(|l| (0..DEVICES).map(move |d| (l, d)))
        .collect();
    order.sort_by_key(|&(l, d)| (d, (l as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    let mut now = 1;
    for &(l, d) in &order {
        now += 1;
        data.touch(l, d, now);
    }
    data.db.flush().unwrap();
    let report = |what: &str, data: &Data, started: Instant| {
        println!(
            "{name:>6}: {what:<16} {:>6} MiB on disk, {:>9} entries, {:>5.0} s",
            files(dir.path()) >> 20,
            data.db.len(),
            started.elapsed().as_secs_f64()
        );
    };
    report("seeded", &data, started);
    for round in 1..=2 {
        let started = Instant::now();
        for _ in 0..licenses * DEVICES / 4 {
            let pick = ids.next_u64() as usize;
            now += 1;
            data.touch(pick / DEVICES % licenses, pick % DEVICES, now);
        }
        data.db.flush().unwrap();
        report(&format!("refresh round {round}"), &data, started);
    }
}

fn main() {
    let licenses = env("LAYOUT_BENCH_LICENSES", 100_000);
    let segment = env("LAYOUT_BENCH_SEGMENT", 0);
    println!(
        "{licenses} licenses, {DEVICES} devices and addresses each, segment size {}",
        if segment > 0 {
            format!("{segment} bytes")
        } else {
            "sled's default".into()
        }
    );
    run(Layout::Rows, "rows", licenses, segment);
    run(Layout::Blocks, "blocks", licenses, segment);
}
