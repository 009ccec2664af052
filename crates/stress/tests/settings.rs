//! Settings the library refuses itself, as usage errors naming the
//! setting, before it touches the directory (a caller other than the CLI
//! has no argument parser checking ranges for it).

use std::sync::Arc;

use lithify::log::{CleanerConfig, LogConfig};
use lithify::vfs::OsFs;
use lithify_stress::bank::BankStress;
use lithify_stress::db::{DbStress, base_options};
use lithify_stress::log::LogStress;
use lithify_stress::{MAX_STRESS_KEYS, MAX_VALUE_SIZE};

fn refused(r: lithify_stress::Result<()>, setting: &str) {
    let e = r.expect_err("refused").to_string();
    assert!(e.contains(setting), "{e}");
}

#[test]
fn out_of_range_settings_are_usage_errors_naming_the_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let say = |_: &str| {};
    let opts = || base_options(Arc::new(OsFs));
    let db = |f: fn(&mut DbStress)| {
        let mut s = DbStress::new(tmp.path().join("db"));
        f(&mut s);
        lithify_stress::db::run(&s, opts(), &say)
    };
    refused(db(|s| s.duration = Some(f64::NAN)), "--duration");
    refused(db(|s| s.duration = Some(f64::INFINITY)), "--duration");
    refused(db(|s| s.keys = Some(MAX_STRESS_KEYS + 1)), "--keys");
    refused(
        db(|s| s.max_value_size = Some(MAX_VALUE_SIZE + 1)),
        "--max-value-size",
    );
    refused(db(|s| s.readpercent = 90), "add up to 100");

    for accounts in [0, 1] {
        let s = BankStress {
            accounts: Some(accounts),
            ..BankStress::new(tmp.path().join("bank"))
        };
        refused(lithify_stress::bank::run(&s, opts(), &say), "--accounts");
    }

    let s = LogStress {
        duration: Some(-1.0),
        ..LogStress::new(tmp.path().join("logs"))
    };
    let r = lithify_stress::log::run(
        &s,
        Arc::new(OsFs),
        LogConfig::default(),
        CleanerConfig::default(),
        &say,
    );
    refused(r, "--duration");
    // A refused run leaves nothing behind.
    let left = lithify::vfs::FileSystem::list_dir(&OsFs, tmp.path()).unwrap();
    assert!(left.is_empty(), "{left:?}");
}
