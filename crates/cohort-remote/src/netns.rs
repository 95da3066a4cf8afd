//! Network namespaces as hosts of their own, for the tests and benchmarks that pull a
//! network cable: a [`Host`] is a namespace joined to this one by a veth pair (directly,
//! or through a [`Bridge`] here), whose link can be taken down and up again (no FIN, no
//! RST: silence), and which is removed when its owner is dropped.
//!
//! Everything goes through iproute2's `ip`, so it needs root (or `CAP_NET_ADMIN` and
//! `CAP_SYS_ADMIN`) and iproute2. Where either is missing, every constructor returns a
//! [`NetnsError`] naming what failed, and the caller skips with that reason.
//!
//! Not a stable API: it exists for the process tests of `cohort-remote` and
//! `cohort-cluster` and for `cohort-bench chaos`.
//!
//! ```no_run
//! use cohort_remote::netns::Host;
//!
//! let host = match Host::joined("demo1", [10, 77, 1, 1].into(), [10, 77, 1, 2].into()) {
//!     Ok(host) => host,
//!     Err(e) => return println!("skipped: {e}"),
//! };
//! let _child = host.namespace().command("sleep").arg("5").spawn().unwrap();
//! host.link(false).unwrap(); // the cable is pulled
//! host.link(true).unwrap();
//! ```

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::process::Command;
use thiserror::Error;

/// The longest interface name the kernel takes (`IFNAMSIZ` less its terminating zero).
const MAX_INTERFACE_NAME: usize = 15;

/// Why a namespace, a link or a bridge could not be made or changed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NetnsError {
    /// `ip` could not be started: iproute2 is not installed (or this is not Linux).
    #[error("cannot start `ip` ({0}); needs iproute2")]
    NoIproute2(String),
    /// An `ip` command was refused for lack of privileges.
    #[error("`{command}` is not permitted ({stderr}); needs root")]
    NotPermitted {
        /// The command, as typed in a shell.
        command: String,
        /// What it printed.
        stderr: String,
    },
    /// An `ip` command failed for another reason (a name in use, a kernel without veth or
    /// bridge support, a program that cannot run in the namespace).
    #[error("`{command}` failed: {stderr}")]
    Failed {
        /// The command, as typed in a shell.
        command: String,
        /// What it printed.
        stderr: String,
    },
    /// An interface name derived from a host's name is over the kernel's 15 bytes.
    #[error("interface name {0:?} is over 15 bytes: choose a host name of at most 14")]
    NameTooLong(String),
}

/// Runs `ip <args>`.
fn ip(args: &[&str]) -> Result<(), NetnsError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| NetnsError::NoIproute2(e.to_string()))?;
    if out.status.success() {
        return Ok(());
    }
    let command = format!("ip {}", args.join(" "));
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let lower = stderr.to_ascii_lowercase();
    Err(
        if lower.contains("not permitted") || lower.contains("permission denied") {
            NetnsError::NotPermitted { command, stderr }
        } else {
            NetnsError::Failed { command, stderr }
        },
    )
}

/// `name` as an interface name, or why the kernel would refuse it.
fn interface(name: String) -> Result<String, NetnsError> {
    if name.len() > MAX_INTERFACE_NAME {
        Err(NetnsError::NameTooLong(name))
    } else {
        Ok(name)
    }
}

/// A network namespace; deleted when dropped.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// Adds the namespace `name` and checks that a program can run in it (`ip netns exec`
    /// also mounts `/sys` there, which some containers refuse).
    pub fn add(name: &str) -> Result<Self, NetnsError> {
        ip(&["netns", "add", name])?;
        let ns = Namespace { name: name.into() };
        ns.run(&["true"])?;
        Ok(ns)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What runs a program inside: `ip netns exec <name>`, the program and its arguments
    /// to follow.
    pub fn exec_prefix(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.name]
    }

    /// A command that runs `program` inside.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Runs `program_and_args` inside and waits for it.
    pub fn run(&self, program_and_args: &[&str]) -> Result<(), NetnsError> {
        let mut all = vec!["netns", "exec", self.name.as_str()];
        all.extend_from_slice(program_and_args);
        ip(&all)
    }

    /// Runs `ip <args>` inside.
    fn ip(&self, args: &[&str]) -> Result<(), NetnsError> {
        let mut all = vec!["ip"];
        all.extend_from_slice(args);
        self.run(&all)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A network interface in this namespace; deleted when dropped (a veth end takes its peer
/// with it).
#[derive(Debug)]
pub struct Link {
    name: String,
}

impl Link {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets it up or down.
    pub fn set_up(&self, up: bool) -> Result<(), NetnsError> {
        ip(&["link", "set", &self.name, if up { "up" } else { "down" }])
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.name]);
    }
}

/// A bridge in this namespace with an address on a /24, to which [`Host::on_bridge`]
/// attaches hosts; deleted when dropped.
#[derive(Debug)]
pub struct Bridge {
    link: Link,
    addr: Ipv4Addr,
}

impl Bridge {
    /// Makes the bridge `name` with the address `addr`/24 and sets it up.
    pub fn create(name: &str, addr: Ipv4Addr) -> Result<Self, NetnsError> {
        let name = interface(name.into())?;
        ip(&["link", "add", "name", &name, "type", "bridge"])?;
        let link = Link { name };
        ip(&["addr", "add", &format!("{addr}/24"), "dev", &link.name])?;
        link.set_up(true)?;
        Ok(Self { link, addr })
    }

    /// Its address (this host's, seen from the hosts on the bridge).
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }
}

/// A namespace joined to this one by a veth pair: its end inside has an address on a /24
/// and is up, as is the namespace's loopback. Taking the end outside down ([`Host::link`])
/// cuts it off. Removed when dropped.
#[derive(Debug)]
pub struct Host {
    // Declared first, so dropped first: the link goes before its namespace.
    outside: Link,
    namespace: Namespace,
    inside: String,
    addr: Ipv4Addr,
}

impl Host {
    /// A namespace `name` whose veth pair ends here as `<name>o` with the address
    /// `here`/24, and inside as `<name>i` with `there`/24.
    pub fn joined(name: &str, here: Ipv4Addr, there: Ipv4Addr) -> Result<Self, NetnsError> {
        Self::create(name, there, |outside| {
            ip(&["addr", "add", &format!("{here}/24"), "dev", outside])
        })
    }

    /// A namespace `name` whose veth pair ends here as `<name>o`, a port of `bridge`, and
    /// inside as `<name>i` with `there`/24 (on the bridge's /24).
    pub fn on_bridge(name: &str, bridge: &Bridge, there: Ipv4Addr) -> Result<Self, NetnsError> {
        Self::create(name, there, |outside| {
            ip(&["link", "set", outside, "master", &bridge.link.name])
        })
    }

    /// The steps both kinds share; `attach` readies the end outside before it is set up.
    fn create(
        name: &str,
        there: Ipv4Addr,
        attach: impl FnOnce(&str) -> Result<(), NetnsError>,
    ) -> Result<Self, NetnsError> {
        let outside = interface(format!("{name}o"))?;
        let inside = interface(format!("{name}i"))?;
        let namespace = Namespace::add(name)?;
        ip(&[
            "link", "add", &outside, "type", "veth", "peer", "name", &inside,
        ])?;
        let host = Host {
            outside: Link { name: outside },
            namespace,
            inside,
            addr: there,
        };
        ip(&["link", "set", &host.inside, "netns", name])?;
        attach(&host.outside.name)?;
        host.outside.set_up(true)?;
        let ns = &host.namespace;
        ns.ip(&["addr", "add", &format!("{there}/24"), "dev", &host.inside])?;
        ns.ip(&["link", "set", &host.inside, "up"])?;
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(host)
    }

    /// Its namespace (to run programs there).
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Its address.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// The name of the veth end inside.
    pub fn inside_interface(&self) -> &str {
        &self.inside
    }

    /// Plugs (`true`) or pulls (`false`) its cable: the veth end outside up or down.
    pub fn link(&self, up: bool) -> Result<(), NetnsError> {
        self.outside.set_up(up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_too_long_for_an_interface_is_refused_before_anything_is_made() {
        let e = Host::joined(
            "fifteen-bytes-x",
            [10, 0, 0, 1].into(),
            [10, 0, 0, 2].into(),
        )
        .unwrap_err();
        assert_eq!(e, NetnsError::NameTooLong("fifteen-bytes-xo".into()));
        assert!(e.to_string().contains("at most 14"), "{e}");
        let e = Bridge::create("a-bridge-name-x-", [10, 0, 0, 1].into()).unwrap_err();
        assert_eq!(e, NetnsError::NameTooLong("a-bridge-name-x-".into()));
    }
}
