//! A deadline a `Duration` from now that every `Duration` gives, `ZERO`
//! and `MAX` included: the one rule of every crate of the workspace for a
//! timeout, a sleep or a run's length that must become an `Instant`.

use std::time::{Duration, Instant};

/// About a century: the deadline of a duration too long to add to the
/// clock.
const FAR: Duration = Duration::from_secs(100 * 365 * 86400);

/// The instant `d` from now, saturating: a duration that does not fit the
/// clock (`Duration::MAX`) gives an instant a century away (or, should
/// even that not fit, the farthest the clock can represent of a year, a
/// day, or now). Never panics.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let now = Instant::now();
/// assert!(manycore_sync::deadline_in(Duration::ZERO) >= now);
/// assert!(manycore_sync::deadline_in(Duration::MAX) > now + Duration::from_secs(86400));
/// ```
pub fn deadline_in(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR))
        .or_else(|| now.checked_add(Duration::from_secs(365 * 86400)))
        .or_else(|| now.checked_add(Duration::from_secs(86400)))
        .unwrap_or(now)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn deadlines_saturate() {
        let now = Instant::now();
        assert!(deadline_in(Duration::ZERO) >= now);
        assert!(deadline_in(Duration::MAX) >= now + Duration::from_secs(365 * 86400));
        let d = Duration::from_secs(5);
        let t = deadline_in(d);
        assert!(t >= now + d && t <= Instant::now() + d);
    }
}
