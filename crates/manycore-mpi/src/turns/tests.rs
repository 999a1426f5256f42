use super::*;
use proptest::prelude::*;

#[derive(Debug, Clone, Copy)]
enum Op {
    /// A dispatching thread queues the next job.
    Push,
    /// The oldest turn in the core's mailbox starts.
    Start,
    /// The core discards the oldest turn in its mailbox unrun.
    Drop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![4 => Just(Op::Push), 4 => Just(Op::Start), 1 => Just(Op::Drop)]
}

proptest! {
    /// Whatever the interleaving of pushes, turns starting and turns
    /// dropped: at most one turn is on its way, one is whenever jobs wait,
    /// jobs run in push order, and every job either runs or is dropped
    /// with a dropped turn (none is lost, none runs twice).
    #[test]
    fn jobs_run_in_order_and_none_is_stranded(ops in proptest::collection::vec(op(), 0..200)) {
        let mut t: Turns<u32> = Turns::default();
        let mut mailbox = 0usize; // turns on their way
        let mut next = 0u32;
        let mut ran: Vec<u32> = Vec::new();
        let mut dropped: Vec<u32> = Vec::new();
        for o in ops {
            match o {
                Op::Push => {
                    if t.push(next) {
                        mailbox += 1;
                    }
                    next += 1;
                }
                Op::Start if mailbox > 0 => {
                    mailbox -= 1;
                    let (job, more) = t.start();
                    if more {
                        mailbox += 1;
                    }
                    prop_assert!(job.is_some(), "a turn found no job");
                    ran.extend(job);
                }
                Op::Drop if mailbox > 0 => {
                    mailbox -= 1;
                    dropped.extend(t.dropped());
                }
                _ => {}
            }
            prop_assert!(mailbox <= 1, "{mailbox} turns on their way");
            prop_assert_eq!(t.scheduled, mailbox == 1);
            prop_assert!(t.jobs.is_empty() || mailbox == 1, "jobs wait with no turn on its way");
        }
        // Deliver the rest: every job queued runs.
        while mailbox > 0 {
            mailbox -= 1;
            let (job, more) = t.start();
            if more {
                mailbox += 1;
            }
            ran.extend(job);
        }
        prop_assert!(t.jobs.is_empty());
        prop_assert!(ran.windows(2).all(|w| w[0] < w[1]), "out of order: {:?}", ran);
        let mut all: Vec<u32> = ran.iter().chain(&dropped).copied().collect();
        all.sort_unstable();
        prop_assert_eq!(all, (0..next).collect::<Vec<_>>());
    }
}
