//! `cohort-bench chaos` for a few seconds: network faults through the proxy and a killed
//! and restarted node process, every message handled once or counted, in order.

use cohort::testing::watchdog;
use std::process::Command;
use std::time::Duration;

/// Runs the bench binary with `args`; its exit status, standard output and error.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cohort-bench"))
        .arg("chaos")
        .args(args)
        .output()
        .expect("run cohort-bench chaos");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// As [`run`], its standard error passed on.
fn chaos(args: &[&str]) -> (Option<i32>, String) {
    let (status, stdout, stderr) = run(args);
    eprintln!("{stderr}");
    (status, stdout)
}

/// The report's row for `kind`, split into its cells.
fn row<'a>(report: &'a str, kind: &str) -> Vec<&'a str> {
    let line = report
        .lines()
        .find(|l| l.starts_with(&format!("| {kind} |")))
        .unwrap_or_else(|| panic!("no row for {kind} in\n{report}"));
    line.trim_matches('|').split('|').map(str::trim).collect()
}

#[test]
fn a_short_chaos_run_accounts_for_every_message() {
    watchdog(Duration::from_secs(180), || {
        let (status, report) = chaos(&[
            "--secs",
            "4",
            "--senders",
            "3",
            "--rate",
            "300",
            "--faults",
            "reset,cut,half-open,kill",
        ]);
        println!("{report}");
        assert_eq!(status, Some(0), "{report}");
        assert!(
            report.contains(
                "chaos: clean: unaccounted 0, duplicates 0, FIFO violations 0, phase errors 0"
            ),
            "{report}"
        );
        for kind in ["reset", "cut", "half-open", "kill"] {
            let cells = row(&report, kind);
            let (sent, handled): (u64, u64) =
                (cells[2].parse().unwrap(), cells[3].parse().unwrap());
            assert!(sent > 0 && handled > 0, "{kind}: {cells:?}");
            assert_eq!(&cells[5..8], ["0", "0", "0"], "{kind}: {cells:?}");
            // The fault was seen: a reconnection was measured.
            assert_ne!(cells[8], "-", "{kind}: {cells:?}");
        }
        // The silent peer and the killed one were declared down by the sending side.
        assert_ne!(row(&report, "half-open")[10], "-");
        assert_ne!(row(&report, "kill")[10], "-");
    });
}

#[test]
fn chaos_refuses_bad_flags_naming_them() {
    watchdog(Duration::from_secs(60), || {
        let (status, _, err) = run(&["--nodes", "5"]);
        assert_eq!(status, Some(2));
        assert!(err.contains("--nodes 5: must be 2 to 4"), "{err}");
        let (status, _, err) = run(&["--rate", "0"]);
        assert_eq!(status, Some(2));
        assert!(err.contains("--rate 0"), "{err}");
    });
}
