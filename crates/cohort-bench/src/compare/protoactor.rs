//! The Proto.Actor (Go) port: built with the Go toolchain when `go` is installed, else
//! reported as skipped with the command that installs it.

use super::peers::{Framework, build_script, built_framework, not_installed};
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
        return not_installed(name, "go", install_hint(dir));
    }
    let src = dir.join("protoactor");
    let program = src.join("build/peer-protoactor");
    eprintln!(
        "compare: building the Proto.Actor port (go build, {})",
        src.display()
    );
    let built = build_script(dir, &["protoactor"]);
    built_framework(name, program, built)
}
