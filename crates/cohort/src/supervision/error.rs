//! [`SupervisorError`]: a supervisor that cannot be built as asked.

/// Building a [`Supervisor`](super::Supervisor) failed.
///
/// ```
/// use cohort::supervision::{ChildSpec, Supervisor, SupervisorError};
/// struct Idle;
/// impl cohort::Agent for Idle {}
///
/// let err = Supervisor::builder("sup")
///     .child(ChildSpec::new("a", |c| { c.add(Idle); }))
///     .child(ChildSpec::new("a", |c| { c.add(Idle); }))
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, SupervisorError::DuplicateChild(ref n) if n == "a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SupervisorError {
    /// Two children have the same name.
    #[error("two children are named `{0}`: give each child of a supervisor its own name")]
    DuplicateChild(String),
    /// The intensity window is zero: no restart could ever be counted in it.
    #[error(
        "the restart intensity window is zero: give a window such as Intensity::new(3, Duration::from_secs(5))"
    )]
    ZeroWindow,
    /// The back-off parameters are out of range.
    #[error("invalid back-off: {0}")]
    InvalidBackoff(&'static str),
}
