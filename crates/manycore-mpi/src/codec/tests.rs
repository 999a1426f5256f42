use super::*;

#[test]
fn small_integers_take_one_byte() {
    assert_eq!(encode(&7u64).unwrap(), vec![7]);
    assert_eq!(encode(&(1u32, 2u8)).unwrap().len(), 2);
}

#[test]
fn round_trips() {
    let v = (
        String::from("knary"),
        vec![1u64, 300, u64::MAX],
        Some(-5i32),
    );
    let b = encode(&v).unwrap();
    assert_eq!(decode::<(String, Vec<u64>, Option<i32>)>(&b).unwrap(), v);
}

#[test]
fn encode_into_appends_after_a_header() {
    let mut buf = vec![0xAA; 4];
    encode_into(&mut buf, &42u16).unwrap();
    assert_eq!(&buf[..4], &[0xAA; 4]);
    assert_eq!(decode::<u16>(&buf[4..]).unwrap(), 42);
}

#[test]
fn bulk_encodes_as_a_byte_string() {
    let b = Bulk(vec![1, 2, 3]);
    let e = encode(&b).unwrap();
    assert_eq!(e, vec![3, 1, 2, 3]);
    assert_eq!(decode::<Bulk>(&e).unwrap(), b);
}

#[test]
fn truncated_input_is_an_error_not_a_panic() {
    let e = encode(&(1u64 << 40)).unwrap();
    assert!(decode::<u64>(&e[..e.len() - 1]).is_err());
    assert!(decode::<String>(&[5, b'a']).is_err());
}

#[test]
fn call_errors_travel() {
    for e in [
        crate::CallError::Panicked("boom".into()),
        crate::CallError::UnknownFunction(7),
        crate::CallError::NoSuchCore { core: 3, cores: 2 },
        crate::CallError::StaleObject,
    ] {
        assert_eq!(decode::<crate::CallError>(&encode(&e).unwrap()).unwrap(), e);
    }
}

#[test]
fn a_prefix_leaves_the_rest() {
    let mut buf = encode(&vec![1u64, 2, 3]).unwrap();
    encode_into(&mut buf, &(7u8, String::from("x"))).unwrap();
    let mut rest = &buf[..];
    assert_eq!(decode_prefix::<Vec<u64>>(&mut rest).unwrap(), vec![1, 2, 3]);
    assert_eq!(decode::<(u8, String)>(rest).unwrap(), (7, "x".to_string()));
}

#[test]
fn a_pair_encodes_as_its_halves_one_after_the_other() {
    // What RemoteGroup relies on to combine encoded results.
    let (a, b) = (300u64, String::from("ab"));
    let mut halves = encode(&a).unwrap();
    halves.extend(encode(&b).unwrap());
    assert_eq!(encode(&(a, b)).unwrap(), halves);
}

#[test]
fn bulk_from_a_slice_of_numbers_and_back() {
    let xs: Vec<u64> = (0..1000).map(|i| i * 0x0101_0101_0101).collect();
    let b = Bulk::from_slice(&xs);
    assert_eq!(b.0.len(), 8 * xs.len());
    assert_eq!(b.as_slice::<u64>().unwrap(), &xs[..]);
    assert_eq!(b.to_vec::<u64>().unwrap(), xs);
    let fs = [0.5f64, -0.0, f64::MAX, f64::MIN_POSITIVE, f64::NAN];
    let b = Bulk::from_slice(&fs);
    let back = b.to_vec::<f64>().unwrap();
    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back), bits(&fs));
    assert_eq!(bits(b.as_slice::<f64>().unwrap()), bits(&fs));
    // Other widths view the same bytes.
    assert_eq!(b.as_slice::<u32>().unwrap().len(), 10);
    assert_eq!(
        Bulk::from_slice::<u16>(&[]).as_slice::<u64>().unwrap(),
        &[] as &[u64]
    );
    assert_eq!(Bulk::default().to_vec::<f64>().unwrap(), Vec::<f64>::new());
}

#[test]
fn bulk_of_the_wrong_size_is_an_error() {
    let b = Bulk(vec![0; 9]);
    let e = b.as_slice::<u64>().unwrap_err();
    assert!(e.0.contains("not a whole number of u64"), "{e}");
    assert!(b.to_vec::<u64>().is_err());
    assert!(b.to_vec::<()>().is_err());
    assert!(b.as_slice::<()>().is_err());
    assert_eq!(b.as_slice::<u8>().unwrap().len(), 9);
}

#[test]
fn misaligned_bytes_are_an_error_not_ub() {
    let xs = [1u64, 2, 3];
    let bytes: &[u8] = bytemuck::cast_slice(&xs);
    // One byte in: never aligned for u64, though 16 bytes are two u64s.
    let off = &bytes[1..17];
    let e = pod_slice::<u64>(off).unwrap_err();
    assert!(e.0.contains("not aligned"), "{e}");
    // Copying works at any alignment.
    let v = Bulk(off.to_vec()).to_vec::<u64>().unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(pod_slice::<u64>(&bytes[8..]).unwrap(), &[2, 3]);
}

proptest::proptest! {
    /// Any bytes viewed as any width: the right slice or an error, never
    /// a panic; the view and the copy agree.
    #[test]
    fn bulk_views_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64), skip in 0usize..8) {
        let skip = skip.min(bytes.len());
        let b = Bulk(bytes[skip..].to_vec());
        match b.as_slice::<u32>() {
            Ok(v) => {
                proptest::prop_assert_eq!(v.len() * 4, b.0.len());
                proptest::prop_assert_eq!(v, &b.to_vec::<u32>().unwrap()[..]);
            }
            Err(_) => proptest::prop_assert!(b.0.len() % 4 != 0 || b.0.as_ptr() as usize % 4 != 0),
        }
        let view = pod_slice::<u64>(&bytes[skip..]);
        if let Ok(v) = view {
            proptest::prop_assert_eq!(bytemuck::cast_slice::<u64, u8>(v), &bytes[skip..]);
        }
    }
}
