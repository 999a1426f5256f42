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
