//! `remote_fn!`: declares remote functions and registers them.

/// Declares a remote function, registers it in the program's registry (with
/// `inventory`, at start) and defines a `static` of the same name: the typed
/// handle that places, remote objects and joins take. Four forms, told apart
/// by their parameters:
///
/// ```
/// use manycore_mpi::{remote_fn, Bulk, Ctx};
///
/// remote_fn! {
///     /// A plain function: `RemoteFn<u64, u64>`.
///     pub fn square(x: u64) -> u64 { x * x }
/// }
/// remote_fn! {
///     /// Bulk bytes travel beside the arguments: `BulkFn<u8, u64>`.
///     pub fn count(byte: u8, data: Bulk) -> u64 {
///         data.0.iter().filter(|&&b| b == byte).count() as u64
///     }
/// }
/// pub struct Counter(u64);
/// remote_fn! {
///     /// A method of `Counter` objects: `MethodFn<Counter, u64, u64>`.
///     pub fn add(c: &mut Counter, by: u64) -> u64 { c.0 += by; c.0 }
/// }
/// remote_fn! {
///     /// A task of a distributed join: `TaskFn<u32, u64>`.
///     pub fn fib(cx: Ctx, n: u32) -> u64 {
///         if n < 2 { return n as u64; }
///         let (a, b) = cx.join(|cx| fib.run(cx, n - 1), &fib, n - 2);
///         a + b
///     }
/// }
///
/// // Every handle can also run its body here and now.
/// assert_eq!(square.run(7), 49);
/// assert_eq!(count.run(1, Bulk(vec![1, 2, 1])), 2);
/// assert_eq!(add.run(&mut Counter(1), 2), 3);
/// assert_eq!(fib.run(Ctx::sequential(), 20), 6765);
/// ```
///
/// A function takes one argument (use a tuple or a struct for more) and
/// states its result type (`-> ()` for none); arguments and results are
/// serde types. Names are the wire protocol's identifiers (like Barrelfish
/// message names) and must be unique in the program: a duplicate is refused
/// by `World::init`.
#[macro_export]
macro_rules! remote_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($cx:ident : Ctx $(<$lt:lifetime>)?, $a:ident : $A:ty) -> $R:ty $body:block) => {
        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::TaskFn<$A, $R> =
            $crate::TaskFn::__new(stringify!($name), |$cx: $crate::Ctx<'_>, $a: $A| -> $R { $body });
        $crate::__private::inventory::submit! {
            $crate::__private::Entry {
                name: stringify!($name),
                args: stringify!(Ctx, $A),
                result: stringify!($R),
                handler: $crate::__private::Handler::Task(|cx, args, out| {
                    $crate::__private::task(&$name, cx, args, out)
                }),
            }
        }
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident($o:ident : &mut $T:ty, $a:ident : $A:ty) -> $R:ty $body:block) => {
        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::MethodFn<$T, $A, $R> =
            $crate::MethodFn::__new(stringify!($name), |$o: &mut $T, $a: $A| -> $R { $body });
        $crate::__private::inventory::submit! {
            $crate::__private::Entry {
                name: stringify!($name),
                args: stringify!(&mut $T, $A),
                result: stringify!($R),
                handler: $crate::__private::Handler::Method(|obj, args, out| {
                    $crate::__private::method(&$name, obj, args, out)
                }),
            }
        }
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident($a:ident : $A:ty, $b:ident : Bulk) -> $R:ty $body:block) => {
        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::BulkFn<$A, $R> =
            $crate::BulkFn::__new(stringify!($name), |$a: $A, $b: $crate::Bulk| -> $R { $body });
        $crate::__private::inventory::submit! {
            $crate::__private::Entry {
                name: stringify!($name),
                args: stringify!($A, Bulk),
                result: stringify!($R),
                handler: $crate::__private::Handler::Bulk(|args, bulk, out| {
                    $crate::__private::bulk(&$name, args, bulk, out)
                }),
            }
        }
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident($a:ident : $A:ty) -> $R:ty $body:block) => {
        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::RemoteFn<$A, $R> =
            $crate::RemoteFn::__new(stringify!($name), |$a: $A| -> $R { $body });
        $crate::__private::inventory::submit! {
            $crate::__private::Entry {
                name: stringify!($name),
                args: stringify!($A),
                result: stringify!($R),
                handler: $crate::__private::Handler::Call(|args, out| {
                    $crate::__private::call(&$name, args, out)
                }),
            }
        }
    };
}
