//! Background work that repeats until the server stops: one place for the loop, the pause and
//! the stop signal, so that each job says only what one round does.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

/// Runs `round` now and then every `pause` after the last round ended, until `stop` turns true
/// (a round under way finishes first) or its sender is gone.
pub async fn every<F, Fut>(pause: Duration, mut stop: watch::Receiver<bool>, mut round: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        if *stop.borrow() {
            return;
        }
        round().await;
        tokio::select! {
            changed = stop.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(pause) => {},
        }
    }
}

/// Runs `round` every `pause`, and once more when `stop` turns true (or its sender is gone):
/// for work that gathers in memory and is written in batches, so that none is lost at shutdown.
pub async fn every_then_once_more<F, Fut>(
    pause: Duration,
    mut stop: watch::Receiver<bool>,
    mut round: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stop.changed() => break,
        }
        if *stop.borrow() {
            break;
        }
        round().await;
    }
    round().await;
}

/// [`every_then_once_more`] for a `flush` of what gathered in memory: a round that fails is
/// logged as `what` failing (what it did not write stays for the next round, as each flush
/// keeps it).
pub async fn flush_every<F, Fut, T, E>(
    pause: Duration,
    stop: watch::Receiver<bool>,
    what: &'static str,
    mut flush: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let round = || {
        let flushed = flush();
        async move {
            if let Err(e) = flushed.await {
                tracing::error!(error = %e, "{what} failed");
            }
        }
    };
    every_then_once_more(pause, stop, round).await;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn counter() -> (Arc<AtomicU32>, impl FnMut() -> std::future::Ready<()>) {
        let rounds = Arc::new(AtomicU32::new(0));
        let counted = rounds.clone();
        (rounds, move || {
            counted.fetch_add(1, Ordering::SeqCst);
            std::future::ready(())
        })
    }

    #[tokio::test]
    async fn every_runs_at_once_then_after_each_pause_and_not_after_the_stop() {
        let (tx, rx) = watch::channel(false);
        let (rounds, round) = counter();
        let job = tokio::spawn(every(Duration::from_millis(5), rx, round));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while rounds.load(Ordering::SeqCst) < 3 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "rounds did not repeat"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tx.send(true).unwrap();
        job.await.unwrap();
        let at_stop = rounds.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            rounds.load(Ordering::SeqCst),
            at_stop,
            "none after the stop"
        );
    }

    #[tokio::test]
    async fn a_batch_job_waits_a_pause_first_and_runs_once_more_when_its_sender_is_gone() {
        let (tx, rx) = watch::channel(false);
        let (rounds, round) = counter();
        let job = tokio::spawn(every_then_once_more(Duration::from_secs(3600), rx, round));
        tokio::task::yield_now().await;
        assert_eq!(
            rounds.load(Ordering::SeqCst),
            0,
            "nothing before the first pause"
        );
        drop(tx);
        job.await.unwrap();
        assert_eq!(rounds.load(Ordering::SeqCst), 1, "once more at the end");
    }
}
