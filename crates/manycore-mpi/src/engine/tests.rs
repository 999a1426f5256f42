use super::*;

#[test]
fn less_than_funneled_is_refused() {
    let r = check_level(ThreadLevel::Single);
    assert!(
        matches!(
            r,
            Err(Error::ThreadLevel {
                required: ThreadLevel::Funneled,
                provided: ThreadLevel::Single
            })
        ),
        "{r:?}"
    );
    let m = r.unwrap_err().to_string();
    assert!(m.contains("Single") && m.contains("Funneled"), "{m}");
}

#[test]
fn funneled_and_up_are_accepted() {
    // Funneled: only the engine calls MPI; Serialized or better: waiting
    // threads may too.
    assert_eq!(check_level(ThreadLevel::Funneled).ok(), Some(false));
    assert_eq!(check_level(ThreadLevel::Serialized).ok(), Some(true));
    assert_eq!(check_level(ThreadLevel::Multiple).ok(), Some(true));
}

#[test]
fn mpi_levels_map_in_order() {
    let levels = [
        Threading::Single,
        Threading::Funneled,
        Threading::Serialized,
        Threading::Multiple,
    ]
    .map(level);
    assert_eq!(
        levels,
        [
            ThreadLevel::Single,
            ThreadLevel::Funneled,
            ThreadLevel::Serialized,
            ThreadLevel::Multiple
        ]
    );
    assert!(levels.windows(2).all(|w| w[0] < w[1]));
}
