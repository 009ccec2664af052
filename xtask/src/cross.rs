//! `cargo xtask cross`: lithify built for Linux on ARM (aarch64) and for
//! Windows (x86-64, GNU toolchain), its library tests run under qemu-user
//! and Wine, all from a Linux x86-64 machine.
//!
//! What each target needs, and where it comes from:
//!
//! | target                      | linker and C compiler   | runner                      |
//! |-----------------------------|-------------------------|-----------------------------|
//! | `aarch64-unknown-linux-gnu` | `gcc-aarch64-linux-gnu` | `qemu-aarch64` (`qemu-user`) |
//! | `x86_64-pc-windows-gnu`     | `gcc-mingw-w64-x86-64`  | `wine` (`wine`, `wine64`)    |
//!
//! The Rust targets come from `rustup target add`; this task adds them when
//! they are missing. The Debian packages it only names: `.ci/run` installs
//! them.
//!
//! Wine runs in a prefix of its own under `target/cross/wine`, so a
//! developer's `~/.wine` is never touched. Debian's Wine 8 lacks the
//! `bcryptprimitives.dll` that Rust's std has needed since 1.78; the
//! prefix gets a small one built from `xtask/wine/bcryptprimitives.c`.

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::{Result, cargo, root, run};

/// One cross target: how to link for it and how to run its binaries.
struct Target {
    /// The short name `--target` takes.
    name: &'static str,
    triple: &'static str,
    /// Host programs the build and the runner need, with the Debian
    /// package of each.
    tools: &'static [(&'static str, &'static str)],
}

const TARGETS: [Target; 2] = [
    Target {
        name: "aarch64",
        triple: "aarch64-unknown-linux-gnu",
        tools: &[
            ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
            ("qemu-aarch64", "qemu-user"),
        ],
    },
    Target {
        name: "windows",
        triple: "x86_64-pc-windows-gnu",
        tools: &[
            ("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"),
            ("wine", "wine wine64"),
        ],
    },
];

/// The crates CI tests on both targets: the file formats and the
/// structures under them, plus the engine's damage matrix.
const CI_SUBSET: [&str; 6] = [
    "lithify-base",
    "lithify-vfs",
    "lithify-wal",
    "lithify-memtable",
    "lithify-sstable",
    "lithify-offsetmap",
];

/// `cargo xtask cross [--target aarch64|windows] [--ci]`.
pub(crate) fn cross(args: &[String]) -> Result {
    let mut only = None;
    let mut ci = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ci" => ci = true,
            "--target" => {
                let name = args.next().ok_or("--target needs aarch64 or windows")?;
                only = Some(
                    TARGETS
                        .iter()
                        .find(|t| t.name == name)
                        .ok_or_else(|| format!("unknown target {name}: aarch64 or windows"))?,
                );
            }
            other => return Err(format!("unknown argument to cross: {other}")),
        }
    }
    let targets: Vec<&Target> = match only {
        Some(t) => vec![t],
        None => TARGETS.iter().collect(),
    };
    for target in &targets {
        check_tools(target)?;
    }
    let libraries = crate::library_packages()?;
    let mut times = Vec::new();
    for target in targets {
        let started = Instant::now();
        ensure_rust_target(target.triple)?;
        if target.name == "windows" {
            wine_prefix()?;
        }
        if ci {
            // Doctests are left out: each is its own binary to link and
            // start under the emulator, and the full run covers them.
            let mut test = cross_cargo(target, "test");
            test.args(["--lib", "--tests"]);
            for p in CI_SUBSET {
                test.args(["-p", p]);
            }
            run(&mut test)?;
            run(cross_cargo(target, "test").args(["-p", "lithify-engine", "--test", "damage"]))?;
        } else {
            // Everything builds, the tools included; the libraries' tests run.
            run(&mut cross_cargo(target, "build"))?;
            let mut test = cross_cargo(target, "test");
            test.arg("--no-fail-fast");
            for p in &libraries {
                test.args(["-p", p]);
            }
            run(&mut test)?;
        }
        times.push((target.triple, started.elapsed()));
    }
    for (triple, took) in times {
        eprintln!("xtask: cross {triple} passed in {:.0}s", took.as_secs_f64());
    }
    Ok(())
}

/// `cargo <verb> --target <triple>`, with the linker and the runner set.
fn cross_cargo(target: &Target, verb: &str) -> Command {
    let mut cmd = cargo();
    cmd.args([verb, "--target", target.triple]);
    match target.name {
        "aarch64" => {
            cmd.env(
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
                "aarch64-linux-gnu-gcc",
            )
            .env(
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
                "qemu-aarch64 -L /usr/aarch64-linux-gnu",
            );
        }
        _ => {
            cmd.env(
                "CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER",
                "x86_64-w64-mingw32-gcc",
            )
            .env("CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER", "wine")
            .env("WINEPREFIX", wine_prefix_dir())
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", WINE_DLL_OVERRIDES);
        }
    }
    cmd
}

/// Fails naming the Debian packages to install when a host tool is missing.
fn check_tools(target: &Target) -> Result {
    let missing: Vec<&str> = target
        .tools
        .iter()
        .filter(|(program, _)| !on_path(program))
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} needs programs that are not installed: apt-get install {}",
            target.triple,
            missing.join(" ")
        ))
    }
}

fn on_path(program: &str) -> bool {
    env::var_os("PATH")
        .is_some_and(|paths| env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn ensure_rust_target(triple: &str) -> Result {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("could not run rustup: {e}"))?;
    if String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == triple)
    {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", triple]))
}

fn wine_prefix_dir() -> PathBuf {
    root().join("target/cross/wine")
}

/// No Mono and no Gecko: a headless prefix would otherwise try to install
/// them, and the tests need neither.
const WINE_DLL_OVERRIDES: &str = "mscoree,mshtml=";

/// A Wine prefix of our own, initialised once, with the
/// `bcryptprimitives.dll` std needs.
fn wine_prefix() -> Result {
    let prefix = wine_prefix_dir();
    let system32 = prefix.join("drive_c/windows/system32");
    // Written once wineboot has finished: an interrupted initialisation
    // is started again, not taken for a prefix.
    let ready = prefix.join(".lithify-ready");
    if !ready.exists() {
        if prefix.exists() {
            fs::remove_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        }
        fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        run(Command::new("wine")
            .args(["wineboot", "--init"])
            .env("WINEPREFIX", &prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", WINE_DLL_OVERRIDES))?;
        // wineboot returns before wineserver has written the prefix out.
        run(Command::new("wineserver")
            .arg("--wait")
            .env("WINEPREFIX", &prefix))?;
        fs::write(&ready, b"").map_err(|e| format!("{}: {e}", ready.display()))?;
    }
    let dll = system32.join("bcryptprimitives.dll");
    let source = root().join("xtask/wine/bcryptprimitives.c");
    let stale = match (fs::metadata(&dll), fs::metadata(&source)) {
        (Ok(d), Ok(s)) => match (d.modified(), s.modified()) {
            (Ok(d), Ok(s)) => d < s,
            _ => true,
        },
        _ => true,
    };
    if stale {
        run(Command::new("x86_64-w64-mingw32-gcc")
            .args(["-O2", "-shared", "-o"])
            .arg(&dll)
            .arg(&source)
            .arg("-ladvapi32"))?;
    }
    Ok(())
}
