//! Exact non-negative rationals: the models compute with fractions of a token
//! or of a window exactly, so that they can be trusted without rounding rules.

/// An exact rational number, always in lowest terms.
#[derive(Clone, Copy, Debug)]
pub struct Q {
    n: i128,
    d: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Q {
    /// `n / d`, reduced.
    pub fn new(n: i128, d: i128) -> Q {
        let g = gcd(n, d).max(1);
        Q { n: n / g, d: d / g }
    }

    /// The integer `n`.
    pub fn int(n: u64) -> Q {
        Q::new(n as i128, 1)
    }

    /// `self <= o`.
    pub fn le(self, o: Q) -> bool {
        self.n * o.d <= o.n * self.d
    }

    /// The larger of the two.
    pub fn max(self, o: Q) -> Q {
        if self.le(o) {
            o
        } else {
            self
        }
    }

    /// The smaller of the two.
    pub fn min(self, o: Q) -> Q {
        if self.le(o) {
            self
        } else {
            o
        }
    }

    /// The largest integer `<= self`.
    pub fn floor(self) -> i128 {
        self.n.div_euclid(self.d)
    }

    /// The smallest integer `>= self`.
    pub fn ceil(self) -> i128 {
        -(-self.n).div_euclid(self.d)
    }
}

impl std::ops::Add for Q {
    type Output = Q;

    /// `self + o`, exactly.
    fn add(self, o: Q) -> Q {
        Q::new(self.n * o.d + o.n * self.d, self.d * o.d)
    }
}

impl std::ops::Sub for Q {
    type Output = Q;

    /// `self - o`, exactly.
    fn sub(self, o: Q) -> Q {
        Q::new(self.n * o.d - o.n * self.d, self.d * o.d)
    }
}

impl std::ops::Mul for Q {
    type Output = Q;

    /// `self * o`, exactly.
    fn mul(self, o: Q) -> Q {
        Q::new(self.n * o.n, self.d * o.d)
    }
}

#[cfg(test)]
mod tests {
    use super::Q;

    #[test]
    fn rounds_exactly() {
        let third = Q::new(10, 3);
        assert_eq!((third.floor(), third.ceil()), (3, 4));
        assert_eq!((Q::int(2) - third).floor(), -2);
        assert!((Q::new(1, 3) + Q::new(2, 3)).le(Q::int(1)));
        assert!(!(Q::new(7, 2) * Q::new(2, 7)).le(Q::new(99, 100)));
    }
}
