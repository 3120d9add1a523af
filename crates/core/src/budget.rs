//! A decode budget for one untrusted document (a report opened in the viewer or by
//! `pinbench-verify`): the total bytes its compressed parts may expand to (chunk data,
//! histograms) and the total token chunks its records may hold. Decoders charge the
//! budget that is active on this thread; with none active (a live run), nothing is
//! limited. A breach is an error with a clear message, never an allocation.

use std::cell::Cell;

/// The limits of one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Bytes that decoding may produce in all.
    pub bytes: u64,
    /// Token chunks all records may hold.
    pub chunks: u64,
}

/// The budget of one report: 256 MiB decoded, 40 M token chunks (10,000 requests of
/// 4,000 chunks each).
pub const REPORT: Budget = Budget {
    bytes: 256 << 20,
    chunks: 40_000_000,
};

thread_local! {
    static LEFT: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// Runs `f` with `budget` active on this thread (nesting keeps the outer one).
pub fn with<T>(budget: Budget, f: impl FnOnce() -> T) -> T {
    let outer = LEFT.with(|l| l.get());
    if outer.is_some() {
        return f();
    }
    LEFT.with(|l| l.set(Some(budget)));
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            LEFT.with(|l| l.set(None));
        }
    }
    let _reset = Reset;
    f()
}

/// Charges `n` decoded bytes; `Err` with a message when the budget is spent.
pub fn charge_bytes(n: u64) -> Result<(), String> {
    LEFT.with(|l| match l.get() {
        None => Ok(()),
        Some(b) if n <= b.bytes => {
            l.set(Some(Budget {
                bytes: b.bytes - n,
                ..b
            }));
            Ok(())
        }
        Some(_) => Err(format!(
            "the document expands to more than {} MiB when decoded (a decompression bomb?)",
            REPORT.bytes >> 20
        )),
    })
}

/// Charges `n` token chunks.
pub fn charge_chunks(n: u64) -> Result<(), String> {
    LEFT.with(|l| match l.get() {
        None => Ok(()),
        Some(b) if n <= b.chunks => {
            l.set(Some(Budget {
                chunks: b.chunks - n,
                ..b
            }));
            Ok(())
        }
        Some(_) => Err(format!(
            "the records hold more than {} token chunks in all",
            REPORT.chunks
        )),
    })
}

/// Token chunks left in the active budget (`None`: no budget active).
pub fn chunks_left() -> Option<u64> {
    LEFT.with(|l| l.get().map(|b| b.chunks))
}

/// Bytes left in the active budget (`None`: no budget active).
pub fn bytes_left() -> Option<u64> {
    LEFT.with(|l| l.get().map(|b| b.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_limits_only_inside_with_and_is_shared_by_its_charges() {
        assert!(charge_bytes(u64::MAX).is_ok(), "no budget: no limit");
        let b = Budget {
            bytes: 10,
            chunks: 3,
        };
        with(b, || {
            assert!(charge_bytes(6).is_ok());
            assert!(charge_bytes(5).is_err(), "11 > 10");
            assert!(charge_chunks(3).is_ok());
            assert!(charge_chunks(1).is_err());
            // Nested: the outer budget stays.
            with(REPORT, || {
                assert!(charge_bytes(4).is_ok() && charge_bytes(1).is_err())
            });
        });
        assert_eq!(bytes_left(), None);
    }
}
