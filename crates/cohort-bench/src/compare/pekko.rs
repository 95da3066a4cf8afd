//! The Apache Pekko peer (peers/pekko, a Maven project): built into one runnable jar when a JDK
//! and Maven are installed, run as `java <JVM_FLAGS> -jar peer-pekko.jar <scenario> ...`.

use super::peers::{Availability, Framework, build_script, not_installed};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// The JVM flags of every Pekko run (peers/README.md says why): a fixed 2 GiB heap on the
/// JDK's default collector (G1).
pub const JVM_FLAGS: [&str; 2] = ["-Xms2g", "-Xmx2g"];

/// The command that installs a JDK and Maven.
pub fn install_hint(dir: &Path) -> String {
    format!("bash {}", dir.join("pekko/install-deps.sh").display())
}

/// Whether `program -version` (or `--version`) starts.
fn has(program: &str, flag: &str) -> bool {
    Command::new(program)
        .arg(flag)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The newest modification time under `p` (the sources and pom.xml).
fn newest(p: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(p).ok()?;
    if meta.is_file() {
        return meta.modified().ok();
    }
    std::fs::read_dir(p)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| newest(&e.path()))
        .max()
}

/// Whether the jar is missing or older than its sources.
fn stale(src: &Path, jar: &Path) -> bool {
    let built = std::fs::metadata(jar).and_then(|m| m.modified()).ok();
    let sources = [src.join("pom.xml"), src.join("src")]
        .iter()
        .filter_map(|p| newest(p))
        .max();
    match (built, sources) {
        (Some(b), Some(s)) => s > b,
        _ => true,
    }
}

/// Builds the jar (Maven, offline first: `peers/build.sh pekko`).
fn build(dir: &Path) -> Result<(), String> {
    eprintln!(
        "compare: building the Pekko port (mvn -B -q package -f {})",
        dir.join("pekko/pom.xml").display()
    );
    build_script(dir, &["pekko"])
}

/// The Pekko port, built when stale, or why it cannot run.
pub fn framework(dir: &Path) -> Framework {
    let name = "pekko";
    let missing = match (has("java", "-version"), has("mvn", "--version")) {
        (true, true) => None,
        (false, _) => Some("a JDK (java)"),
        (true, false) => Some("Maven (mvn)"),
    };
    if let Some(m) = missing {
        return not_installed(name, m, install_hint(dir));
    }
    let src = dir.join("pekko");
    let jar: PathBuf = src.join("target/peer-pekko.jar");
    let built = if stale(&src, &jar) {
        build(dir)
    } else {
        Ok(())
    };
    Framework {
        name,
        status: match built {
            Ok(()) if jar.exists() => Availability::Ready {
                program: PathBuf::from("java"),
                lead: JVM_FLAGS
                    .iter()
                    .map(|s| s.to_string())
                    .chain(["-jar".into(), jar.display().to_string()])
                    .collect(),
            },
            Ok(()) => Availability::Failed(format!("{} was not built", jar.display())),
            Err(e) => Availability::Failed(e),
        },
    }
}
