use super::*;
use proptest::prelude::*;

#[test]
fn round_trips_every_field() {
    let h = Header {
        kind: Kind::Method,
        flags: Header::BULK | Header::ONE_WAY,
        core: 513,
        func: 0xDEAD_BEEF,
        seq: u64::MAX - 1,
        object: (7 << 32) | 3,
        clock: 99,
    };
    let f = h.frame(0);
    assert_eq!(f.len(), Header::LEN);
    assert_eq!(Header::parse(&f), Some(h));
    assert!(h.has(Header::BULK) && !h.has(Header::FAILED));
}

#[test]
fn every_kind_round_trips() {
    for b in 0..=255u8 {
        if let Some(k) = Kind::from_u8(b) {
            assert_eq!(k as u8, b);
        }
    }
    assert_eq!(Kind::from_u8(0), None);
    assert_eq!(Kind::from_u8(16), None);
}

#[test]
fn short_or_foreign_frames_are_refused() {
    assert_eq!(Header::parse(&[1; 31]), None);
    let mut f = Header::new(Kind::Call).frame(0);
    f[0] = 200;
    assert_eq!(Header::parse(&f), None);
}

proptest! {
    #[test]
    fn any_header_round_trips(
        kind in 1u8..=15,
        flags in any::<u8>(),
        core in any::<u16>(),
        func in any::<u32>(),
        seq in any::<u64>(),
        object in any::<u64>(),
        clock in any::<u64>(),
        tail in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let h = Header { kind: Kind::from_u8(kind).unwrap(), flags, core, func, seq, object, clock };
        let mut f = h.frame(tail.len());
        f.extend_from_slice(&tail);
        prop_assert_eq!(Header::parse(&f), Some(h));
        let mut g = f.clone();
        Header::set_func(&mut g, func ^ 1);
        prop_assert_eq!(Header::parse(&g).map(|x| x.func), Some(func ^ 1));
        prop_assert_eq!(&g[Header::LEN..], &tail[..]);
    }
}
