//! Criterion benchmarks of the lithify crates; run them with `cargo xtask bench`.
