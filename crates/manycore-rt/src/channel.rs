//! Event channels (the "Cross-core invocations on the SCC" paper, section
//! III.C; REFLEX event channels): an `EventSink<E>` lives on one core and
//! decides what an event does there; an `EventChannel<E>` is the `Clone +
//! Send` global pointer to it, and `emit` sends an event without knowing the
//! reaction. Sinks come in three kinds: a handler closure, an async task
//! woken per event, and a counting sink that fires once after n events (the
//! collective helper of that paper).

use crate::core::Core;
use crate::core_loop::with_local;
use crate::error::InvokeError;
use crate::object::Remote;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The receiving end of an event channel, living on one core.
pub struct EventSink<E> {
    handler: Box<dyn FnMut(E)>,
}

impl<E> std::fmt::Debug for EventSink<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

impl<E> std::fmt::Debug for Events<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("queued", &self.q.borrow().items.len())
            .finish()
    }
}

/// A global pointer to an [`EventSink`]: emit events to it from anywhere.
pub struct EventChannel<E> {
    sink: Remote<EventSink<E>>,
}

impl<E> Clone for EventChannel<E> {
    fn clone(&self) -> Self {
        Self {
            sink: self.sink.clone(),
        }
    }
}

impl<E> std::fmt::Debug for EventChannel<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventChannel")
            .field("sink", &self.sink)
            .finish()
    }
}

impl<E: Send + 'static> EventChannel<E> {
    /// Sends an event to the sink, one-sided. Fails only if the runtime is
    /// shut down; an event for a closed sink is dropped on the sink's core.
    pub fn emit(&self, e: E) -> Result<(), InvokeError> {
        self.sink.spawn(move |s| (s.handler)(e))
    }

    /// The core the sink lives on.
    pub fn core(&self) -> &Core {
        self.sink.core()
    }

    /// Removes the sink; later events are dropped.
    pub fn close(&self) -> Result<(), InvokeError> {
        self.sink.free()
    }
}

/// Events delivered to an async sink task: `events.recv().await`.
pub struct Events<E> {
    q: Rc<RefCell<EventQueue<E>>>,
}

struct EventQueue<E> {
    items: VecDeque<E>,
    waker: Option<Waker>,
}

impl<E> Events<E> {
    /// The next event (waits until one arrives).
    pub fn recv(&mut self) -> impl Future<Output = E> + '_ {
        NextEvent { q: &self.q }
    }
    /// The next event if one is queued.
    pub fn try_next(&mut self) -> Option<E> {
        self.q.borrow_mut().items.pop_front()
    }
}

struct NextEvent<'a, E> {
    q: &'a Rc<RefCell<EventQueue<E>>>,
}

impl<E> Future for NextEvent<'_, E> {
    type Output = E;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<E> {
        let mut q = self.q.borrow_mut();
        match q.items.pop_front() {
            Some(e) => Poll::Ready(e),
            None => {
                q.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Core {
    /// Registers a sink on this core whose handler runs for every event.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// let ch = rt.core(1).sink(move |e: u32| tx.send((manycore_rt::current().unwrap().index(), e)).unwrap()).unwrap();
    /// ch.emit(7).unwrap();
    /// assert_eq!(rx.recv().unwrap(), (1, 7));
    /// ```
    pub fn sink<E, H>(&self, handler: H) -> Result<EventChannel<E>, InvokeError>
    where
        E: Send + 'static,
        H: FnMut(E) + Send + 'static,
    {
        let sink = self.place_with(move || EventSink {
            handler: Box::new(handler) as Box<dyn FnMut(E)>,
        })?;
        Ok(EventChannel { sink })
    }

    /// Registers a sink served by an async task on this core: `body` gets the
    /// event stream and is woken for every event.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// let ch = rt.core(1).sink_task(move |mut events| async move {
    ///     let mut sum = 0u64;
    ///     for _ in 0..3 { sum += events.recv().await; }
    ///     tx.send(sum).unwrap();
    /// }).unwrap();
    /// for e in [1, 2, 3] { ch.emit(e).unwrap(); }
    /// assert_eq!(rx.recv().unwrap(), 6);
    /// ```
    pub fn sink_task<E, F, Fut>(&self, body: F) -> Result<EventChannel<E>, InvokeError>
    where
        E: Send + 'static,
        F: FnOnce(Events<E>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let sink = self.place_with(move || {
            let q = Rc::new(RefCell::new(EventQueue {
                items: VecDeque::new(),
                waker: None,
            }));
            let fut = body(Events { q: q.clone() });
            with_local(|l| {
                if let Some(l) = l {
                    l.exec.spawn(l, Box::pin(fut));
                }
            });
            EventSink {
                handler: Box::new(move |e: E| {
                    let w = {
                        let mut q = q.borrow_mut();
                        q.items.push_back(e);
                        q.waker.take()
                    };
                    if let Some(w) = w {
                        w.wake();
                    }
                }) as Box<dyn FnMut(E)>,
            }
        })?;
        Ok(EventChannel { sink })
    }

    /// A counting sink: collects `n` events, then calls `done` once with them
    /// (in arrival order). Events after the n-th are dropped.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// let ch = rt.core(0).counting_sink(2, move |v: Vec<i32>| tx.send(v).unwrap()).unwrap();
    /// ch.emit(1).unwrap();
    /// ch.emit(2).unwrap();
    /// assert_eq!(rx.recv().unwrap(), vec![1, 2]);
    /// ```
    pub fn counting_sink<E, D>(&self, n: usize, done: D) -> Result<EventChannel<E>, InvokeError>
    where
        E: Send + 'static,
        D: FnOnce(Vec<E>) + Send + 'static,
    {
        let mut done = Some(done);
        let mut got = Vec::with_capacity(n);
        if n == 0 {
            if let Some(d) = done.take() {
                d(Vec::new());
            }
        }
        self.sink(move |e: E| {
            if done.is_none() {
                return;
            }
            got.push(e);
            if got.len() == n {
                if let Some(d) = done.take() {
                    d(std::mem::take(&mut got));
                }
            }
        })
    }
}
