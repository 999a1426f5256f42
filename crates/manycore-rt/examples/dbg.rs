fn main() {
    let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    eprintln!("built");
    let inv = rt.core(0).call(|| 6 * 7);
    eprintln!("sent");
    eprintln!("{:?}", inv.wait_timeout(std::time::Duration::from_secs(2)));
    eprintln!("stats {:?}", rt.stats());
    rt.shutdown();
    eprintln!("down");
}
