//! The in-memory transport pair: the reference `Transport`, for tests and embedding.

use async_trait::async_trait;
use mcp_proto::{Frame, Message};
use tokio::sync::{Mutex, mpsc};

use crate::transport::{Inbound, Transport, TransportError};

/// One end of an in-memory connection. Messages sent on one end arrive on
/// the other, in order, without encoding. Both ends are [`Transport`]s, so a
/// test can run a scripted server on the far end.
#[derive(Debug)]
pub struct MemoryTransport {
    tx: Mutex<Option<mpsc::UnboundedSender<Message>>>,
    rx: Mutex<mpsc::UnboundedReceiver<Message>>,
}

/// Two connected in-memory transports.
pub fn memory_pair() -> (MemoryTransport, MemoryTransport) {
    let (a_tx, a_rx) = mpsc::unbounded_channel();
    let (b_tx, b_rx) = mpsc::unbounded_channel();
    (
        MemoryTransport {
            tx: Mutex::new(Some(a_tx)),
            rx: Mutex::new(b_rx),
        },
        MemoryTransport {
            tx: Mutex::new(Some(b_tx)),
            rx: Mutex::new(a_rx),
        },
    )
}

#[async_trait]
impl Transport for MemoryTransport {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        let tx = self.tx.lock().await;
        let tx = tx.as_ref().ok_or(TransportError::Closed)?;
        tx.send(message).map_err(|_| TransportError::Closed)
    }

    fn try_send(&self, message: Message) -> Result<(), Message> {
        // An unbounded channel never makes a sender wait; only a send racing
        // with `close` (which holds the lock) falls back to `send`.
        match self.tx.try_lock() {
            Ok(tx) => match tx.as_ref() {
                Some(tx) => tx.send(message).map_err(|e| e.0),
                None => Err(message),
            },
            Err(_) => Err(message),
        }
    }

    async fn recv(&self) -> Inbound {
        // Cancel safe: both the lock and `UnboundedReceiver::recv` are.
        match self.rx.lock().await.recv().await {
            Some(message) => Inbound::Frame(Frame::Single(message)),
            None => Inbound::Closed(None),
        }
    }

    fn try_recv(&self) -> Option<Inbound> {
        // A closed channel is left for `recv` to report.
        let message = self.rx.try_lock().ok()?.try_recv().ok()?;
        Some(Inbound::Frame(Frame::Single(message)))
    }

    async fn close(&self) -> Result<(), TransportError> {
        // Dropping our sender ends the peer's stream; the peer's `recv` then
        // yields `Closed(None)`.
        self.tx.lock().await.take();
        self.rx.lock().await.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_cross_in_order_and_close_is_seen() {
        let (a, b) = memory_pair();
        for i in 0..3 {
            a.send(Message::notification("n", Some(&i)).unwrap())
                .await
                .unwrap();
        }
        for i in 0..3 {
            match b.recv().await {
                Inbound::Frame(Frame::Single(m)) => {
                    assert_eq!(m, Message::notification("n", Some(&i)).unwrap())
                }
                other => panic!("{other:?}"),
            }
        }
        a.close().await.unwrap();
        assert!(matches!(b.recv().await, Inbound::Closed(None)));
        assert!(matches!(b.recv().await, Inbound::Closed(None)));
        assert!(
            a.send(Message::notification("n", None::<&()>).unwrap())
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn try_recv_takes_only_what_is_ready_and_leaves_the_end_to_recv() {
        let (a, b) = memory_pair();
        assert!(b.try_recv().is_none());
        for i in 0..2 {
            a.try_send(Message::notification("n", Some(&i)).unwrap())
                .unwrap();
        }
        for i in 0..2 {
            match b.try_recv() {
                Some(Inbound::Frame(Frame::Single(m))) => {
                    assert_eq!(m, Message::notification("n", Some(&i)).unwrap())
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(b.try_recv().is_none());
        a.close().await.unwrap();
        assert!(b.try_recv().is_none());
        assert!(matches!(b.recv().await, Inbound::Closed(None)));
    }
}
