//! [`Strategy`]: which children restart when one fails.

/// Which children a supervisor restarts when one of them fails (as in OTP).
///
/// ```
/// use cohort::supervision::Strategy;
/// assert_eq!(Strategy::default(), Strategy::OneForOne);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Only the failed child restarts.
    #[default]
    OneForOne,
    /// Every child stops and every child restarts (in start order): for children that only
    /// work together.
    OneForAll,
    /// The failed child and every child started after it stop and restart (in start order):
    /// for children that depend on those started before them.
    RestForOne,
}

impl Strategy {
    /// The children (indices in start order) that restart when child `failed` of `count`
    /// fails.
    pub(super) fn affected(self, failed: usize, count: usize) -> std::ops::Range<usize> {
        match self {
            Strategy::OneForOne => failed..failed + 1,
            Strategy::OneForAll => 0..count,
            Strategy::RestForOne => failed..count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Strategy;

    #[test]
    fn affected_children_follow_start_order() {
        assert_eq!(Strategy::OneForOne.affected(1, 3), 1..2);
        assert_eq!(Strategy::OneForAll.affected(1, 3), 0..3);
        assert_eq!(Strategy::RestForOne.affected(1, 3), 1..3);
    }
}
