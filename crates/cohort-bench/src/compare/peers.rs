//! The peer frameworks: where their ports live, how they are built, and whether they can run
//! here. A peer that cannot be built is never silently left out: it comes back as skipped
//! (with the command that installs what it lacks) or failed (with the build's error).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A framework the comparison runs.
#[derive(Debug, Clone)]
pub struct Framework {
    /// Its name in the table ("cohort", "actix", ...).
    pub name: &'static str,
    /// How to run it, or why it cannot run.
    pub status: Availability,
}

/// Whether a framework can run.
#[derive(Debug, Clone)]
pub enum Availability {
    /// Runs `program` with the given leading arguments, then the case's own.
    Ready { program: PathBuf, lead: Vec<String> },
    /// Not installed here: the reason and the command that installs it.
    Skipped(String),
    /// Its build failed: the error.
    Failed(String),
}

/// The Rust peers, in the order of the table.
pub const RUST_PEERS: [&str; 3] = ["actix", "kameo", "ractor"];

/// The cargo profile the Rust peers are built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PeerProfile {
    /// `release`: the same code generation as cohort's release build (for figures).
    Release,
    /// `ci`: a fast build for smoke tests, never for figures.
    Ci,
}

impl PeerProfile {
    fn name(self) -> &'static str {
        match self {
            Self::Release => "release",
            Self::Ci => "ci",
        }
    }
}

/// The peers/ folder of this source tree.
pub fn default_peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers")
}

/// The last lines of a failed command's output (what to show in the table).
fn tail(out: &std::process::Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("error"))
        .unwrap_or(lines.len().saturating_sub(3));
    lines[start..lines.len().min(start + 3)].join(" | ")
}

/// Runs a build command: `Err` with the command and its output's tail when it fails.
pub(super) fn run_build(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    match cmd.output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!("build failed ({shown}): {}", tail(&out))),
        Err(e) => Err(format!("could not start {shown}: {e}")),
    }
}

/// Runs `peers/build.sh` (under `dir`) with `args`: the ports' build commands live in that
/// script, which CI's background build runs too.
pub(super) fn build_script(dir: &Path, args: &[&str]) -> Result<(), String> {
    run_build(Command::new("bash").arg(dir.join("build.sh")).args(args))
}

/// Builds the Rust peers (a no-op when up to date) and returns one entry per framework.
fn rust_peers(dir: &Path, profile: PeerProfile) -> Vec<Framework> {
    let manifest = dir.join("rust/Cargo.toml");
    if !manifest.exists() {
        return RUST_PEERS
            .map(|name| Framework {
                name,
                status: Availability::Failed(format!("{} not found", manifest.display())),
            })
            .to_vec();
    }
    eprintln!(
        "compare: building the Rust peers (cargo build --profile {} --manifest-path {})",
        profile.name(),
        manifest.display()
    );
    let built = build_script(dir, &["rust", profile.name()]);
    RUST_PEERS
        .map(|name| {
            let program = dir
                .join("rust/target")
                .join(profile.name())
                .join(format!("peer-{name}"));
            let status = match &built {
                Ok(()) if program.exists() => Availability::Ready {
                    program,
                    lead: Vec::new(),
                },
                Ok(()) => Availability::Failed(format!("{} was not built", program.display())),
                Err(e) => Availability::Failed(e.clone()),
            };
            Framework { name, status }
        })
        .to_vec()
}

/// The command that installs CAF's dependencies.
pub fn caf_install_hint(dir: &Path) -> String {
    format!("bash {}", dir.join("caf/install-deps.sh").display())
}

/// Builds the CAF port when libcaf-dev and cmake are installed.
fn caf(dir: &Path) -> Framework {
    let name = "caf";
    let has_caf = Path::new("/usr/include/caf/all.hpp").exists();
    let has_cmake = Command::new("cmake").arg("--version").output().is_ok();
    if !has_caf || !has_cmake {
        let missing = if has_caf { "cmake" } else { "libcaf-dev" };
        return not_installed(name, missing, caf_install_hint(dir));
    }
    let build = dir.join("caf/build");
    eprintln!(
        "compare: building the CAF port (cmake, {})",
        build.display()
    );
    let built = build_script(dir, &["caf"]);
    built_framework(name, build.join("peer-caf"), built)
}

/// A peer skipped because `missing` is not installed here, with the command that installs it.
pub(super) fn not_installed(name: &'static str, missing: &str, install: String) -> Framework {
    Framework {
        name,
        status: Availability::Skipped(format!(
            "{missing} is not installed; install it with: {install}"
        )),
    }
}

/// A peer whose build gave `built`: ready to run `program`, or failed with the build's error.
pub(super) fn built_framework(
    name: &'static str,
    program: PathBuf,
    built: Result<(), String>,
) -> Framework {
    Framework {
        name,
        status: match built {
            Ok(()) => Availability::Ready {
                program,
                lead: Vec::new(),
            },
            Err(e) => Availability::Failed(e),
        },
    }
}

/// cohort itself (this very binary) and every peer, built where needed.
pub fn frameworks(dir: &Path, profile: PeerProfile, only: &[String]) -> Vec<Framework> {
    let wanted = |n: &str| only.is_empty() || only.iter().any(|o| o == n);
    let mut out = vec![Framework {
        name: "cohort",
        status: match std::env::current_exe() {
            Ok(program) => Availability::Ready {
                program,
                lead: Vec::new(),
            },
            Err(e) => Availability::Failed(format!("cannot find cohort-bench itself: {e}")),
        },
    }];
    if RUST_PEERS.iter().any(|n| wanted(n)) {
        out.extend(
            rust_peers(dir, profile)
                .into_iter()
                .filter(|f| wanted(f.name)),
        );
    }
    if wanted("caf") {
        out.push(caf(dir));
    }
    if wanted("pekko") {
        out.push(super::pekko::framework(dir));
    }
    if wanted("protoactor") {
        out.push(super::protoactor::framework(dir));
    }
    out
}
