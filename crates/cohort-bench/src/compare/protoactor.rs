//! The Proto.Actor (Go) port: built with the Go toolchain when `go` is installed, else
//! reported as skipped with the command that installs it.

use super::peers::{Availability, Framework, built_framework, run_build};
use std::path::Path;
use std::process::Command;

/// The command that installs the Go toolchain the port needs.
pub fn install_hint(dir: &Path) -> String {
    format!("bash {}", dir.join("protoactor/install-deps.sh").display())
}

/// Builds `peers/protoactor` (`go build`, a no-op when up to date) into its `build/`.
pub fn framework(dir: &Path) -> Framework {
    let name = "protoactor";
    if Command::new("go").arg("version").output().is_err() {
        return Framework {
            name,
            status: Availability::Skipped(format!(
                "go is not installed; install it with: {}",
                install_hint(dir)
            )),
        };
    }
    let src = dir.join("protoactor");
    let program = src.join("build/peer-protoactor");
    eprintln!(
        "compare: building the Proto.Actor port (go build, {})",
        src.display()
    );
    let built = run_build(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&program)
            .arg(".")
            .current_dir(&src),
    );
    built_framework(name, program, built)
}
