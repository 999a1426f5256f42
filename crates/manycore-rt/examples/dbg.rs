use manycore_rt::{IdlePolicy, Runtime};
use std::time::{Duration, Instant};
fn main() {
    let rt = Runtime::builder().cores(2).idle(IdlePolicy::Sleep).build().unwrap();
    let c1 = rt.core(1).clone();
    let r = rt.core(0).spawn_async(async move {
        let mut v = Vec::new();
        for _ in 0..5 {
            let deadline = Instant::now() + Duration::from_millis(1);
            let r = c1.spawn_async(async { manycore_rt::sleep(Duration::from_millis(20)).await }).deadline(deadline).await;
            v.push((r, Instant::now().saturating_duration_since(deadline)));
        }
        v
    }).wait();
    println!("{r:?}");
}
