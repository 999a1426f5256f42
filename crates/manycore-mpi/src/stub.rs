//! The generic halves of the stubs that [`remote_fn!`](crate::remote_fn)
//! registers: decode the arguments, run the body, encode the result after
//! the reply's header. Not public API; the macro names them through
//! `__private`.

use crate::codec::{decode, encode_into, Bulk};
use crate::error::CallError;
use crate::function::{BulkFn, MethodFn, RemoteFn, TaskFn};
use crate::join::Ctx;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::Any;

/// The stub of a `RemoteFn`.
pub fn call<A: DeserializeOwned, R: Serialize>(
    f: &RemoteFn<A, R>,
    args: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CallError> {
    let a: A = decode(args)?;
    let r = (f.body())(a);
    Ok(encode_into(out, &r)?)
}

/// The stub of a `BulkFn`.
pub fn bulk<A: DeserializeOwned, R: Serialize>(
    f: &BulkFn<A, R>,
    args: &[u8],
    bulk: Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), CallError> {
    let a: A = decode(args)?;
    let r = (f.body())(a, Bulk(bulk));
    Ok(encode_into(out, &r)?)
}

/// The stub of a `MethodFn`: refuses an object of another type.
pub fn method<T: 'static, A: DeserializeOwned, R: Serialize>(
    f: &MethodFn<T, A, R>,
    obj: &mut dyn Any,
    args: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CallError> {
    let obj = obj
        .downcast_mut::<T>()
        .ok_or_else(|| CallError::WrongType(f.name().to_string()))?;
    let a: A = decode(args)?;
    let r = (f.body())(obj, a);
    Ok(encode_into(out, &r)?)
}

/// The stub of a `TaskFn`.
pub fn task<A: DeserializeOwned, R: Serialize>(
    f: &TaskFn<A, R>,
    cx: Ctx<'_>,
    args: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CallError> {
    let a: A = decode(args)?;
    let r = (f.body())(cx, a);
    Ok(encode_into(out, &r)?)
}
