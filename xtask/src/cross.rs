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
use std::path::{Path, PathBuf};
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
        if target.name == "windows"
            && let Some(why) = wine_unusable()?
        {
            if !ci {
                return Err(format!("Wine cannot start a program here: {why}"));
            }
            // CI still proves that everything builds for Windows; the
            // message says loudly that its tests did not run (the
            // `::warning::` line is what CI summaries pick up).
            eprintln!("::warning::Windows tests NOT run: Wine cannot start a program here: {why}");
            eprintln!(
                "xtask: WARNING: Windows tests NOT run: Wine cannot start a program here: {why}"
            );
            run(cross_cargo(target, "test")
                .args(["--no-run", "--lib", "--tests"])
                .args(CI_SUBSET.iter().flat_map(|p| ["-p", p])))?;
            run(cross_cargo(target, "test").args([
                "--no-run",
                "-p",
                "lithify-engine",
                "--test",
                "damage",
            ]))?;
            remove_target_dir(target)?;
            times.push((target.triple, "built, tests NOT run", started.elapsed()));
            continue;
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
            // The next target needs the room (CI disks may be nearly full).
            remove_target_dir(target)?;
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
        times.push((target.triple, "passed", started.elapsed()));
    }
    for (triple, outcome, took) in times {
        eprintln!(
            "xtask: cross {triple} {outcome} in {:.0}s",
            took.as_secs_f64()
        );
    }
    Ok(())
}

/// Removes the build directory of `target` (`target/<triple>`).
fn remove_target_dir(target: &Target) -> Result {
    let dir = root().join("target").join(target.triple);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
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

/// Sets up a Wine prefix of our own (initialised once, with the
/// `bcryptprimitives.dll` std needs) and starts a program in it: `None`
/// when that works, else why Wine cannot run programs on this machine.
/// Other failures (a file that cannot be written, a C file that does not
/// compile) are errors.
fn wine_unusable() -> Result<Option<String>> {
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
        eprintln!("xtask: initialising the Wine prefix {}", prefix.display());
        // wineboot's own exit status is not the prefix's state: without
        // the 32-bit Wine (wine32:i386) it reports the 32-bit rundll32 it
        // could not start (c0000135, exit status 0x35 = 53) on some
        // machines and not on others, while the 64-bit prefix the tests
        // use is complete. What counts is checked below.
        let status = wine_command("wine", &prefix)
            .args(["wineboot", "--init"])
            .status()
            .map_err(|e| format!("could not start wine wineboot: {e}"))?;
        // wineboot returns before wineserver has written the prefix out.
        run(wine_command("wineserver", &prefix).arg("--wait"))?;
        let needed = [prefix.join("system.reg"), system32.join("kernel32.dll")];
        if let Some(missing) = needed.iter().find(|p| !p.exists()) {
            return Ok(Some(format!(
                "wine wineboot --init ({status}) left no {} in the prefix {}",
                missing.display(),
                prefix.display()
            )));
        }
        if !status.success() {
            eprintln!(
                "xtask: wine wineboot --init exited with {status}; the 64-bit prefix is complete, going on"
            );
        }
        fs::write(&ready, b"").map_err(|e| format!("{}: {e}", ready.display()))?;
    }
    let dll = system32.join("bcryptprimitives.dll");
    build_if_stale(
        &root().join("xtask/wine/bcryptprimitives.c"),
        &dll,
        &["-shared", "-ladvapi32"],
    )?;
    // A program that only exits 0: whether Wine can start anything here
    // at all, told apart from a test that fails.
    let probe = root().join("target/cross/probe.exe");
    build_if_stale(&root().join("xtask/wine/probe.c"), &probe, &[])?;
    Ok(run(wine_command("wine", &prefix).arg(&probe)).err())
}

/// `program` (wine or wineserver) on our prefix, quiet, without Mono and
/// Gecko.
fn wine_command(program: &str, prefix: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", WINE_DLL_OVERRIDES)
        .current_dir(root());
    cmd
}

/// Compiles `source` with mingw into `output` unless `output` is newer.
fn build_if_stale(source: &Path, output: &Path, flags: &[&str]) -> Result {
    let stale = match (fs::metadata(output), fs::metadata(source)) {
        (Ok(o), Ok(s)) => match (o.modified(), s.modified()) {
            (Ok(o), Ok(s)) => o < s,
            _ => true,
        },
        _ => true,
    };
    if !stale {
        return Ok(());
    }
    let (libs, options): (Vec<&str>, Vec<&str>) = flags.iter().partition(|f| f.starts_with("-l"));
    run(Command::new("x86_64-w64-mingw32-gcc")
        .arg("-O2")
        .args(options)
        .arg("-o")
        .arg(output)
        .arg(source)
        .args(libs))
}
