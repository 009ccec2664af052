//! Transactions from the command line: `bench --benchmarks
//! randomtransaction` on both transaction databases, and `stress bank`
//! run, then verified by a second process.

use serde_json::Value;

mod common;

use common::{fails, ok, s};

/// The `randomtransaction` line of a text report.
fn transaction_line(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("randomtransaction"))
        .unwrap_or_else(|| panic!("no randomtransaction line in:\n{out}"))
}

#[test]
fn randomtransaction_reports_commits_and_the_conflict_rate_on_both_kinds() {
    for (flag, kind) in [
        ("--optimistic-transaction-db", "optimistic"),
        ("--transaction-db", "pessimistic"),
    ] {
        let out = ok(&[
            "bench",
            "--benchmarks",
            "fillrandom,randomtransaction",
            flag,
            "--num",
            "2000",
            "--threads",
            "2",
        ]);
        let line = transaction_line(&out);
        assert!(line.contains("ops/sec"), "{line}");
        assert!(line.contains(&format!("({kind}: ")), "{line}");
        assert!(line.contains("conflict rate "), "{line}");
        assert!(line.contains("each of the 2 sets sums to "), "{line}");
    }
}

#[test]
fn randomtransaction_json_counts_every_attempt_under_contention() {
    // 20 keys per set, 4 threads: transactions get in each other's way.
    for (flag, kind) in [
        ("--optimistic_transaction_db", "optimistic"),
        ("--transaction_db", "pessimistic"),
    ] {
        let out = ok(&[
            "bench",
            "--benchmarks",
            "randomtransaction",
            flag,
            "--num",
            "20",
            "--reads",
            "4000",
            "--threads",
            "4",
            "--transaction_sets",
            "3",
            "--json",
        ]);
        let o: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        assert_eq!(o["benchmark"], "randomtransaction");
        let t = &o["transactions"];
        assert_eq!(t["kind"], kind, "{o}");
        assert_eq!(t["sets"], 3, "{o}");
        let (attempts, committed, failed) = (
            t["attempts"].as_u64().unwrap(),
            t["committed"].as_u64().unwrap(),
            t["failed"].as_u64().unwrap(),
        );
        assert_eq!(attempts, 4000, "{o}");
        assert_eq!(committed + failed, attempts, "{o}");
        assert_eq!(o["ops"].as_u64().unwrap(), committed, "{o}");
        let rate = t["conflict_rate_percent"].as_f64().unwrap();
        assert!(
            (rate - failed as f64 * 100.0 / attempts as f64).abs() < 1e-9,
            "{o}"
        );
        // Each committed transaction added 1..=100 to each set.
        let sum = t["set_sum"].as_u64().unwrap();
        assert!((committed..=committed * 100).contains(&sum), "{o}");
    }
}

#[test]
fn randomtransaction_needs_exactly_one_transaction_database() {
    let err = fails(&["bench", "--benchmarks", "randomtransaction", "--num", "10"]);
    assert!(
        err.contains("--optimistic-transaction-db or --transaction-db"),
        "{err}"
    );
    let err = fails(&[
        "bench",
        "--benchmarks",
        "randomtransaction",
        "--num",
        "10",
        "--transaction-db",
        "--optimistic-transaction-db",
    ]);
    assert!(err.contains("exclude each other"), "{err}");
}

#[test]
fn bank_runs_then_verifies_in_a_second_process() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["optimistic", "pessimistic"] {
        let db = dir.path().join(kind);
        let out = ok(&[
            "stress",
            "bank",
            s(&db),
            "--ops-per-thread",
            "200",
            "--kind",
            kind,
        ]);
        assert!(out.contains("created 100 accounts of 1000"), "{out}");
        assert!(out.contains("stress: running 4 threads x 200"), "{out}");
        assert!(
            out.contains("verified 100 accounts after a clean close: they sum to 100000"),
            "{out}"
        );
        let out = ok(&["stress", "bank", s(&db), "--verify-only"]);
        assert!(
            out.contains("verified 100 accounts at the start: they sum to 100000"),
            "{out}"
        );
        assert!(!out.contains("stress: running"), "{out}");
    }
    let err = fails(&[
        "stress",
        "bank",
        s(&dir.path().join("none")),
        "--verify-only",
    ]);
    assert!(err.contains("no database"), "{err}");
    let err = fails(&[
        "stress",
        "bank",
        s(&dir.path().join("optimistic")),
        "--accounts",
        "7",
    ]);
    assert!(err.contains("created with 100 accounts"), "{err}");
}

#[test]
fn a_bank_whose_money_vanished_fails_naming_the_sum() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ok(&[
        "stress",
        "bank",
        s(&db),
        "--accounts",
        "10",
        "--ops-per-thread",
        "50",
    ]);
    // Take money out of one account behind the bank's back.
    let d = lithify::Db::open(&db, lithify::Options::default()).unwrap();
    let key = b"bank/account/00000003";
    let v = d.get(key).unwrap().expect("account 3 exists");
    let balance = u64::from_le_bytes(v[..].try_into().unwrap());
    d.put(key, (balance + 5).to_le_bytes()).unwrap();
    d.close().unwrap();
    let err = fails(&["stress", "bank", s(&db), "--verify-only"]);
    assert!(
        err.contains("the 10 accounts sum to 10005, not 10000"),
        "{err}"
    );
    assert!(err.contains("money appeared"), "{err}");
}
