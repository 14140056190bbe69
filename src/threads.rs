//! Two independent pieces of work on the two cores a machine like ours has: the halves of a large
//! document's UTF-8 check, the reader's halves of its node list, the index's halves of the inputs,
//! the stock reproduction beside the plan's search, the checker's two taggings.
//! Each caller decides from the size of its work whether a second thread pays for its start.

use std::sync::OnceLock;
use std::thread::ScopedJoinHandle;

/// Graphs from this many nodes split planning, checking and writing the plan JSON between two
/// threads. Starting and joining a thread costs 0.1–0.15 ms on the 2-core development VM; at
/// Qwen3.5's 2,898 nodes the stock reproduction (1.4 ms) beside the search (0.4 ms) was 1.09x
/// slower as a whole process, at 10^5 nodes 0.92x, at 10^6 0.89x (measured 2026-12-05).
pub const BESIDE_FROM_NODES: usize = 50_000;

/// Whether a second thread can run beside this one (asked of the system once).
pub fn two_cores() -> bool {
    static TWO: OnceLock<bool> = OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

/// A scoped thread's result; its panic, if it panicked, goes on in this thread.
pub fn join<T>(handle: ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// `(beside(), here())`: `beside` on a second thread while this one runs `here`, when `worth_it`
/// and the machine has a second core; one after the other otherwise. The results are the same
/// either way: the two must not depend on each other.
pub fn both<A: Send, B>(
    worth_it: bool,
    beside: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> B,
) -> (A, B) {
    if !worth_it || !two_cores() {
        let b = here();
        return (beside(), b);
    }
    std::thread::scope(|scope| {
        let a = scope.spawn(beside);
        let b = here();
        (join(a), b)
    })
}

/// Below this many bytes a document's text is checked on one thread.
const UTF8_ON_TWO_THREADS_FROM: usize = 4 << 20;

/// `bytes` as text if they are UTF-8, checked in two halves on two threads for a large document:
/// the check is the first read of a mapped file, a page fault every few pages, before anything
/// else can start (33 ms at 10^6 nodes on one thread).
#[allow(unsafe_code)] // the whole is UTF-8 once both halves are
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    // Where to cut: a byte near the middle that starts a character (no continuation byte).
    let middle = (bytes.len() >= UTF8_ON_TWO_THREADS_FROM && two_cores())
        .then(|| (bytes.len() / 2..bytes.len()).find(|&i| bytes[i] & 0xC0 != 0x80))
        .flatten();
    let Some(middle) = middle else {
        return std::str::from_utf8(bytes).ok();
    };
    let (first, second) = bytes.split_at(middle);
    let (second_ok, first_ok) = both(
        true,
        || std::str::from_utf8(second).is_ok(),
        || std::str::from_utf8(first).is_ok(),
    );
    // SAFETY: both halves are UTF-8 and split where a character starts, so the whole is UTF-8.
    (first_ok && second_ok).then(|| unsafe { std::str::from_utf8_unchecked(bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_on_two_threads_agrees_with_one() {
        let big = "ab\u{e9}\u{1F600}".repeat(UTF8_ON_TWO_THREADS_FROM / 4);
        assert_eq!(utf8(big.as_bytes()), Some(big.as_str()));
        // Every cut near the middle of a multi-byte text, and a bad byte on either side of it.
        for at in [
            0,
            big.len() / 2 - 1,
            big.len() / 2,
            big.len() / 2 + 1,
            big.len() - 1,
        ] {
            let mut bad = big.clone().into_bytes();
            bad[at] = 0xFF;
            assert_eq!(utf8(&bad), None, "bad byte at {at}");
        }
        let mut truncated = big.into_bytes();
        truncated.pop();
        assert_eq!(utf8(&truncated), None);
    }

    #[test]
    fn both_gives_the_same_pair_on_one_thread_or_two() {
        let data: Vec<u64> = (0..1000).collect();
        let sum = || data.iter().sum::<u64>();
        let max = || data.iter().max().copied();
        assert_eq!(both(true, sum, max), (499_500, Some(999)));
        assert_eq!(both(false, sum, max), (499_500, Some(999)));
    }

    #[test]
    #[should_panic(expected = "beside")]
    fn a_panic_beside_goes_on_here() {
        both(true, || panic!("beside"), || 1);
    }
}
