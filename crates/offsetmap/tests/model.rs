//! Model test: random operation sequences against a `HashMap<Vec<u8>, u64>`
//! oracle, for both layouts and both digests, on maps small enough that
//! sequences fill them to the last slot.

use std::collections::HashMap;

use lithify_offsetmap::{DigestKind, Error, Layout, LoadFactor, MAX_OFFSET, OffsetMap};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Put key `k` of the pool at `offset` (an absolute offset, or a delta
    /// from the base offset).
    Put {
        k: usize,
        offset: OffsetChoice,
    },
    Get {
        k: usize,
    },
    /// Put fresh keys until the map is full, then one more.
    FillToTheLimit,
    /// Put fresh keys while the load-factor rule allows it.
    FillToLoadFactor {
        lf: f64,
    },
    UpdateLatest {
        offset: u64,
    },
    Clear,
    Reset {
        base: u64,
    },
}

#[derive(Debug, Clone, Copy)]
enum OffsetChoice {
    Delta(u64),
    Absolute(u64),
}

const POOL: usize = 48;

fn offset_choice() -> impl Strategy<Value = OffsetChoice> {
    prop_oneof![
        6 => (0u64..1_000).prop_map(OffsetChoice::Delta),
        1 => Just(OffsetChoice::Delta(u64::from(u32::MAX))),
        1 => Just(OffsetChoice::Delta(u64::from(u32::MAX) + 1)),
        1 => prop_oneof![
            Just(0u64),
            Just(MAX_OFFSET),
            Just(MAX_OFFSET + 1),
            Just(u64::MAX),
            any::<u64>(),
        ]
        .prop_map(OffsetChoice::Absolute),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0..POOL, offset_choice()).prop_map(|(k, offset)| Op::Put { k, offset }),
        10 => (0..POOL + 8).prop_map(|k| Op::Get { k }),
        1 => Just(Op::FillToTheLimit),
        1 => prop_oneof![Just(0.5), Just(0.75), Just(0.9), Just(1.0)]
            .prop_map(|lf| Op::FillToLoadFactor { lf }),
        1 => (0u64..5_000).prop_map(|offset| Op::UpdateLatest { offset }),
        1 => Just(Op::Clear),
        1 => prop_oneof![
            (0u64..10_000),
            Just(MAX_OFFSET - 10),
            Just(MAX_OFFSET),
            Just(MAX_OFFSET + 1),
        ]
        .prop_map(|base| Op::Reset { base }),
    ]
}

fn pool_key(k: usize) -> Vec<u8> {
    // Keys of several lengths, including the empty key and keys longer than
    // one MD5 block.
    match k % 4 {
        0 => format!("k{k}").into_bytes(),
        1 => vec![k as u8; k],
        2 => format!("{k:0>80}").into_bytes(),
        _ => (k as u32).to_be_bytes().to_vec(),
    }
}

/// What the map must look like, maintained independently.
struct Model {
    entries: HashMap<Vec<u8>, u64>,
    slots: usize,
    layout: Layout,
    base: u64,
    latest: Option<u64>,
    /// Fresh keys handed out by the fill operations.
    next_fresh: u64,
}

impl Model {
    fn range(&self) -> (u64, u64) {
        match self.layout {
            Layout::Kafka => (0, MAX_OFFSET),
            Layout::Compact => (
                self.base,
                self.base
                    .saturating_add(u64::from(u32::MAX))
                    .min(MAX_OFFSET),
            ),
            other => unreachable!("the model does not know the layout {other:?}"),
        }
    }

    fn resolve(&self, choice: OffsetChoice) -> u64 {
        match choice {
            OffsetChoice::Delta(d) => self.base.saturating_add(d),
            OffsetChoice::Absolute(o) => o,
        }
    }

    /// Applies a put to the model and says which error the map must give.
    fn put(&mut self, key: Vec<u8>, offset: u64) -> Result<(), &'static str> {
        if self.entries.len() >= self.slots {
            return Err("Full");
        }
        if offset > MAX_OFFSET {
            return Err("OffsetTooLarge");
        }
        let (lo, hi) = self.range();
        if offset < lo || offset > hi {
            return Err("OffsetOutOfRange");
        }
        self.entries.insert(key, offset);
        self.latest = Some(offset);
        Ok(())
    }

    fn fresh_key(&mut self) -> Vec<u8> {
        self.next_fresh += 1;
        format!("fresh-{}", self.next_fresh).into_bytes()
    }
}

fn error_name(err: &Error) -> &'static str {
    match err {
        Error::Full { .. } => "Full",
        Error::OffsetTooLarge { .. } => "OffsetTooLarge",
        Error::OffsetOutOfRange { .. } => "OffsetOutOfRange",
        _ => "other",
    }
}

fn check_put(
    map: &mut OffsetMap,
    model: &mut Model,
    key: Vec<u8>,
    offset: u64,
) -> Result<(), TestCaseError> {
    let got = map.put(&key, offset).map_err(|e| error_name(&e));
    let want = model.put(key, offset);
    prop_assert_eq!(got, want, "put at offset {}", offset);
    Ok(())
}

fn run(
    layout: Layout,
    digest: DigestKind,
    slots: usize,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let mut map =
        OffsetMap::with_layout(slots * layout.bytes_per_entry() + slots % 7, layout, digest)
            .expect("at least one slot");
    prop_assert_eq!(map.slots(), slots);
    let mut model = Model {
        entries: HashMap::new(),
        slots,
        layout,
        base: 0,
        latest: None,
        next_fresh: 0,
    };
    for op in ops {
        match op {
            Op::Put { k, offset } => {
                let offset = model.resolve(offset);
                check_put(&mut map, &mut model, pool_key(k), offset)?;
            }
            Op::Get { k } => {
                let key = pool_key(k);
                prop_assert_eq!(map.get(&key), model.entries.get(&key).copied());
            }
            Op::FillToTheLimit => {
                while model.entries.len() < slots {
                    let key = model.fresh_key();
                    let offset = model.base + model.next_fresh % 1_000;
                    check_put(&mut map, &mut model, key, offset)?;
                }
                let key = model.fresh_key();
                let base = model.base;
                check_put(&mut map, &mut model, key, base)?;
                prop_assert_eq!(map.utilization(), 1.0);
                // Absent keys in a completely full map: the lookup ends.
                for _ in 0..4 {
                    let key = model.fresh_key();
                    prop_assert_eq!(map.get(&key), None);
                }
            }
            Op::FillToLoadFactor { lf } => {
                let lf = LoadFactor::new(lf).expect("valid");
                let limit = (slots as f64 * lf.value()).floor() as usize;
                prop_assert_eq!(map.max_entries(lf), limit);
                while map.has_room(lf) {
                    prop_assert!(model.entries.len() < limit);
                    let key = model.fresh_key();
                    let offset = model.base + model.next_fresh % 1_000;
                    check_put(&mut map, &mut model, key, offset)?;
                }
                prop_assert!(model.entries.len() >= limit);
            }
            Op::UpdateLatest { offset } => {
                map.update_latest_offset(offset);
                model.latest = Some(offset);
            }
            Op::Clear => {
                map.clear();
                model.entries.clear();
                model.latest = None;
                prop_assert!(map.as_bytes().iter().all(|&b| b == 0));
            }
            Op::Reset { base } => {
                let got = map.reset(base).is_ok();
                prop_assert_eq!(got, base <= MAX_OFFSET);
                if got {
                    model.entries.clear();
                    model.latest = None;
                    model.base = base;
                }
            }
        }
        prop_assert_eq!(map.size(), model.entries.len());
        prop_assert_eq!(map.latest_offset(), model.latest);
        prop_assert_eq!(map.base_offset(), model.base);
    }
    // Every key the model holds is in the map with its offset, and the map
    // holds nothing else.
    for (key, &offset) in &model.entries {
        prop_assert_eq!(map.get(key), Some(offset));
    }
    let occupied = map
        .as_bytes()
        .chunks(layout.bytes_per_entry())
        .filter(|slot| slot.iter().any(|&b| b != 0))
        .count();
    prop_assert_eq!(occupied, model.entries.len());
    Ok(())
}

fn config() -> impl Strategy<Value = (Layout, DigestKind)> {
    (
        prop_oneof![Just(Layout::Kafka), Just(Layout::Compact)],
        prop_oneof![Just(DigestKind::Md5), Just(DigestKind::Xxh3_128)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn small_maps_behave_like_a_hash_map(
        (layout, digest) in config(),
        slots in 1usize..40,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        run(layout, digest, slots, ops)?;
    }

    #[test]
    fn larger_maps_behave_like_a_hash_map(
        (layout, digest) in config(),
        slots in 40usize..400,
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(layout, digest, slots, ops)?;
    }
}

/// Each of the four configurations, run on its own so that none depends on
/// the random choice of configuration.
#[test]
fn every_configuration_fills_to_the_limit() {
    for layout in [Layout::Kafka, Layout::Compact] {
        for digest in [DigestKind::Md5, DigestKind::Xxh3_128] {
            for slots in [1, 2, 3, 17, 170, 1000] {
                let ops = vec![
                    Op::Put {
                        k: 1,
                        offset: OffsetChoice::Delta(5),
                    },
                    Op::FillToLoadFactor { lf: 0.9 },
                    Op::Get { k: 1 },
                    Op::FillToTheLimit,
                    Op::Put {
                        k: 1,
                        offset: OffsetChoice::Delta(6),
                    },
                    Op::Clear,
                    Op::Reset { base: 123 },
                    Op::FillToTheLimit,
                    Op::Get { k: 2 },
                ];
                run(layout, digest, slots, ops).expect("matches the model");
            }
        }
    }
}
