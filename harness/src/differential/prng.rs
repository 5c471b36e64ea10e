//! A small seeded generator of pseudo-random numbers (SplitMix64, Steele, Lea and Flood,
//! "Fast splittable pseudorandom number generators", OOPSLA 2014): the same seed gives the same
//! sequence on every machine and build, which is all the layout generator needs. Not for
//! anything secret.

/// SplitMix64.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The generator of item `i` of a run seeded `seed`: independent of how many numbers the
    /// items before it drew, so layout `i` is the same whatever `--count` is.
    pub fn for_item(seed: u64, i: u64) -> Rng {
        let mut r = Rng::new(seed ^ i.wrapping_add(1).wrapping_mul(0xA24B_AED4_963E_E407));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(seed: u64) -> Vec<u64> {
        let mut r = Rng::new(seed);
        (0..8).map(|_| r.next_u64()).collect()
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers_and_another_seed_others() {
        assert_eq!(first(1), first(1));
        assert_ne!(first(1), first(2));
        // SplitMix64's published first output for seed 0.
        assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(7);
        for n in 1..50 {
            assert!(r.below(n) < n);
        }
        assert_eq!(r.below(0), 0);
        assert!((3..=5).contains(&r.range(3, 5)));
    }
}
