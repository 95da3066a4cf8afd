//! A step run in a process of its own: this binary started again with the step's subcommand,
//! its records (floor included) read back from its JSON lines.
//!
//! A suite runs the steps with a peak RSS row (skynet, fan-out, timers, spawn-deliver) this
//! way, because glibc gives a freed heap back only in part: `malloc_trim` leaves the top of
//! a worker thread's arena resident, and once a large buffer has been freed (a queue grown
//! to a million demands) `free` keeps such a top up to twice its largest mmap threshold. A
//! process that ran a large step then holds memory no step uses, and a later step's peak
//! would start from it.

use crate::machine::Machine;
use crate::report::Record;
use serde_json::Map;
use std::process::{Command, Stdio};

/// Runs `cohort-bench <args> --runs <runs> --json` and returns its records; a record that
/// says why where the child cannot start, fails, or prints none.
pub fn records(args: &[String], runs: usize, machine: &Machine) -> Vec<Record> {
    let scenario = args.first().map(String::as_str).unwrap_or("step");
    let variant = format!("a process of its own: {}", args.join(" "));
    match run(args, runs) {
        Ok(records) => records,
        Err(e) => vec![Record::failed(scenario, &variant, &Map::new(), e, machine)],
    }
}

fn run(args: &[String], runs: usize) -> Result<Vec<Record>, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("could not find this program to run the step again: {e}"))?;
    let out = Command::new(&exe)
        .args(args)
        .args(["--runs", &runs.to_string(), "--json"])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start {}: {e}", exe.display()))?;
    let records = parse(&String::from_utf8_lossy(&out.stdout))?;
    // A child whose scenario failed exits with 1 and still prints its failed records.
    if records.is_empty() {
        return Err(format!(
            "the step's process printed no record ({})",
            out.status
        ));
    }
    Ok(records)
}

/// The records of a child's standard output, one JSON object per line.
fn parse(stdout: &str) -> Result<Vec<Record>, String> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| {
            serde_json::from_str(l)
                .map_err(|e| format!("unreadable record from the step ({e}): {l}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command as Sub};
    use crate::commands::{fan_out::FanOutArgs, skynet::SkynetArgs};
    use crate::scenarios::skynet::Teardown;
    use crate::scenarios::{Dispatcher, FifoArg, Placement};
    use clap::Parser;

    fn parsed(args: &[String]) -> Sub {
        let mut line = vec!["cohort-bench".to_owned()];
        line.extend_from_slice(args);
        Cli::try_parse_from(line)
            .expect("the step's flags parse")
            .command
    }

    #[test]
    fn a_skynet_step_s_flags_give_the_same_step() {
        let step = SkynetArgs {
            leaves: 1000,
            branching: 10,
            placement: Placement::of(Dispatcher::WorkStealing).fifo(FifoArg::Cooperation),
            teardown: Teardown::Answered,
        };
        let Sub::Skynet(back) = parsed(&step.cli_args()) else {
            panic!("not a skynet command")
        };
        assert_eq!(
            (back.leaves, back.branching, back.placement, back.teardown),
            (1000, 10, step.placement, Teardown::Answered)
        );
    }

    #[test]
    fn a_fan_out_step_s_flags_give_the_same_step() {
        let step = FanOutArgs {
            workers: 7,
            messages: 300,
            work: crate::scenarios::fan_out::Work::Cpu,
            sleep_ms: 3,
            placement: Placement {
                threads: 3,
                max_demands: 9,
                ..Placement::of(Dispatcher::ThreadPool)
            },
        };
        let Sub::FanOut(back) = parsed(&step.cli_args()) else {
            panic!("not a fan-out command")
        };
        assert_eq!(
            (back.workers, back.messages, back.work, back.sleep_ms),
            (7, 300, step.work, 3)
        );
        assert_eq!(back.placement, step.placement);
    }

    #[test]
    fn timers_and_spawn_deliver_steps_flags_give_the_same_steps() {
        use crate::commands::{async_interop::SpawnDeliverArgs, timers::TimersArgs};
        use crate::scenarios::timers::QueueArg;
        let timers = TimersArgs {
            count: 11,
            delay_ms: 12,
            spread_ms: 13,
            periodic_ms: 14,
            queue: vec![QueueArg::Heap, QueueArg::Wheel],
        };
        let Sub::Timers(back) = parsed(&timers.cli_args()) else {
            panic!("not a timers command")
        };
        assert_eq!(
            (back.count, back.delay_ms, back.spread_ms, back.periodic_ms),
            (11, 12, 13, 14)
        );
        assert_eq!(back.queue, timers.queue);
        let spawn = SpawnDeliverArgs {
            count: 21,
            agents: 22,
            in_flight: 23,
            async_threads: 2,
        };
        let Sub::SpawnDeliver(back) = parsed(&spawn.cli_args()) else {
            panic!("not a spawn-deliver command")
        };
        assert_eq!(
            (back.count, back.agents, back.in_flight, back.async_threads),
            (21, 22, 23, 2)
        );
    }

    #[test]
    fn records_read_back_as_written_failed_ones_included() {
        let machine = Machine {
            machine: "test".into(),
            cores: 2,
            rustc: "rustc".into(),
            commit: "abc".into(),
            date: "today".into(),
        };
        let mut ok =
            Record::from_samples("s", "v", &Map::new(), "elapsed_s", &[1.0, 3.0], &machine);
        ok.floor = Some(0.5);
        ok.ratio_to_floor = Some(0.25);
        let failed = Record::failed("s", "v", &Map::new(), "why".into(), &machine);
        let text = [&ok, &failed]
            .map(|r| serde_json::to_string(r).expect("serialises"))
            .join("\n");
        let back = parse(&format!("{text}\nnot a record\n")).expect("parses");
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].value, back[0].min, back[0].max), (2.0, 1.0, 3.0));
        assert_eq!(
            (back[0].floor, back[0].ratio_to_floor),
            (Some(0.5), Some(0.25))
        );
        assert!(back[0].ok && !back[1].ok);
        assert!(back[1].value.is_nan());
        assert_eq!(back[1].error.as_deref(), Some("why"));
        assert!(parse("{not json").is_err());
    }
}
