use super::*;

fn call_stub(_: &[u8], _: &mut Vec<u8>) -> Result<(), CallError> {
    Ok(())
}

static A: Entry = Entry {
    name: "alpha",
    args: "u64",
    result: "u64",
    handler: Handler::Call(call_stub),
};
static B: Entry = Entry {
    name: "beta",
    args: "String",
    result: "()",
    handler: Handler::Call(call_stub),
};
static B2: Entry = Entry {
    name: "beta",
    args: "u32",
    result: "()",
    handler: Handler::Call(call_stub),
};
static C: Entry = Entry {
    name: "gamma",
    args: "u64",
    result: "u64",
    handler: Handler::Call(call_stub),
};

#[test]
fn ids_follow_the_sorted_names_whatever_the_link_order() {
    let r1 = Registry::from_entries(vec![&C, &A, &B]).unwrap();
    let r2 = Registry::from_entries(vec![&B, &C, &A]).unwrap();
    for r in [&r1, &r2] {
        assert_eq!(r.id_of("alpha"), Some(0));
        assert_eq!(r.id_of("beta"), Some(1));
        assert_eq!(r.id_of("gamma"), Some(2));
        assert_eq!(r.id_of("delta"), None);
        assert_eq!(r.get(1).unwrap().name, "beta");
    }
    assert_eq!(r1.hash(), r2.hash());
}

#[test]
fn a_changed_signature_changes_the_hash() {
    let r1 = Registry::from_entries(vec![&A, &B]).unwrap();
    let r2 = Registry::from_entries(vec![&A, &B2]).unwrap();
    assert_ne!(r1.hash(), r2.hash());
    let (sig, in_first) = first_difference(&r1.table(), &r2.table()).unwrap();
    assert!(sig.contains("beta"), "{sig}");
    assert!(in_first);
}

#[test]
fn an_extra_function_is_named() {
    let r1 = Registry::from_entries(vec![&A, &B]).unwrap();
    let r2 = Registry::from_entries(vec![&A, &B, &C]).unwrap();
    assert_ne!(r1.hash(), r2.hash());
    assert_eq!(
        first_difference(&r1.table(), &r2.table()),
        Some(("fn gamma(u64) -> u64".to_string(), false))
    );
    assert_eq!(first_difference(&r1.table(), &r1.table()), None);
}

#[test]
fn duplicates_are_refused() {
    assert_eq!(
        Registry::from_entries(vec![&B, &A, &B2]).unwrap_err(),
        "beta"
    );
}

#[test]
fn the_global_registry_holds_this_crates_test_functions() {
    let r = Registry::global().unwrap();
    let id = r.id_of("tree").expect("registered by join's tests");
    assert_eq!(r.get(id).unwrap().signature(), "task tree(Ctx, u32) -> u64");
}
