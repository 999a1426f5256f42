use super::*;
use crate::registry::{Handler, Registry};
use std::cell::RefCell;

crate::remote_fn! {
    fn tree(cx: Ctx, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let (a, b) = cx.join(|cx| tree.run(cx, depth - 1), &tree, depth - 1);
        a + b + 1
    }
}

crate::remote_fn! {
    fn boom(_cx: Ctx, n: u32) -> u32 {
        if n == 7 { panic!("seven") }
        n
    }
}

/// Promotes at the first join it sees and runs what it promoted when the
/// owner waits, as a thief would, through the registry and the codec.
/// (ticket, function id, encoded argument, depth asked at).
type Stolen = (u64, u32, Vec<u8>, u32);

#[derive(Default)]
struct OneThief {
    asked: Cell<bool>,
    stolen: RefCell<Vec<Stolen>>,
    next: Cell<u64>,
}

impl Scheduler for OneThief {
    fn demand(&self) -> bool {
        !self.asked.get()
    }

    fn serve(&self, top: Option<&Frame<'_>>) {
        self.asked.set(true);
        let f = oldest_latent(top).expect("a latent frame");
        let ticket = self.ticket();
        let mut args = Vec::new();
        let id = f.promote(ticket, &mut args).expect("promotable");
        self.stolen
            .borrow_mut()
            .push((ticket, id, args, depth(top) as u32));
    }

    fn wait_stolen(&self, ticket: u64, _top: Option<&Frame<'_>>) -> Result<Vec<u8>, CallError> {
        let (_, id, args, _) = self
            .stolen
            .borrow()
            .iter()
            .find(|s| s.0 == ticket)
            .cloned()
            .expect("promoted");
        let Some(Handler::Task(h)) = Registry::global().unwrap().get(id).map(|e| e.handler) else {
            panic!("not a task");
        };
        let mut out = vec![0; crate::header::Header::LEN];
        // What the engine's worker does: a panic becomes the task's error.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            h(Ctx::sequential(), &args, &mut out)
        }))
        .map_err(|p| CallError::Panicked(p.downcast_ref::<&str>().unwrap_or(&"?").to_string()))??;
        Ok(out)
    }

    fn ticket(&self) -> u64 {
        self.next.set(self.next.get() + 1);
        self.next.get()
    }
}

#[test]
fn sequential_join_runs_both_halves() {
    assert_eq!(tree.run(Ctx::sequential(), 10), (1 << 11) - 1);
}

#[test]
fn a_promoted_half_comes_back_through_the_codec() {
    let s = OneThief::default();
    let r = tree.run(Ctx::new(&s, None), 6);
    assert_eq!(r, (1 << 7) - 1);
    let stolen = s.stolen.borrow();
    assert_eq!(stolen.len(), 1);
    // The first join's frame was the only one; its argument was depth - 1.
    assert_eq!(decode::<u32>(&stolen[0].2).unwrap(), 5);
}

#[test]
fn the_oldest_frame_is_promoted() {
    // Two nested joins before any promotion: the scheduler asks at the
    // second, and gets the outer one.
    struct Late(OneThief, Cell<u32>);
    impl Scheduler for Late {
        fn demand(&self) -> bool {
            self.1.set(self.1.get() + 1);
            self.1.get() == 2
        }
        fn serve(&self, top: Option<&Frame<'_>>) {
            self.0.serve(top)
        }
        fn wait_stolen(&self, t: u64, top: Option<&Frame<'_>>) -> Result<Vec<u8>, CallError> {
            self.0.wait_stolen(t, top)
        }
        fn ticket(&self) -> u64 {
            self.0.ticket()
        }
    }
    let s = Late(OneThief::default(), Cell::new(0));
    assert_eq!(tree.run(Ctx::new(&s, None), 5), (1 << 6) - 1);
    let stolen = s.0.stolen.borrow();
    assert_eq!(stolen.len(), 1);
    assert_eq!(decode::<u32>(&stolen[0].2).unwrap(), 4, "the outer frame");
    assert_eq!(stolen[0].3, 2, "asked two frames deep");
}

#[test]
fn a_stolen_panic_panics_at_the_join() {
    let s = OneThief::default();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Ctx::new(&s, None).join(|_| 1u32, &boom, 7)
    }));
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().unwrap();
    assert!(msg.contains("boom") && msg.contains("seven"), "{msg}");
}
