//! Summary statistics for benchmark samples: median and percentiles by the
//! nearest-rank method on a sorted copy (no interpolation, so a reported
//! figure is always one that was measured). NaNs are ignored.

/// The `p`-th percentile (`0.0..=100.0`) of `xs` by nearest rank: the
/// smallest sample such that at least `p`% of the samples are at or below it.
/// `None` for an empty input (or one of only NaNs).
pub fn percentile(xs: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let p = p.clamp(0.0, 100.0);
    // Nearest rank: ceil(p/100 * n), 1-based, at least 1.
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

/// The median of `xs`: the mean of the two middle samples for an even count,
/// the middle one for an odd count. `None` for an empty input.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The 99th percentile of `xs` (nearest rank).
pub fn p99(xs: &[f64]) -> Option<f64> {
    percentile(xs, 99.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 2.0]), Some(2.0));
        assert_eq!(median(&[f64::NAN]), None);
    }

    #[test]
    fn p99_nearest_rank() {
        assert_eq!(p99(&[]), None);
        assert_eq!(p99(&[7.0]), Some(7.0));
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(p99(&v), Some(99.0));
        let v: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        assert_eq!(p99(&v), Some(990.0));
        // Fewer than 100 samples: p99 is the maximum.
        assert_eq!(p99(&[1.0, 50.0, 2.0]), Some(50.0));
    }

    #[test]
    fn percentile_bounds() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 50.0), Some(2.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert_eq!(percentile(&v, 250.0), Some(4.0));
    }
}
