//! A private tmux server for tests that need a real terminal (the TUI's keys, screens and
//! ways out). Needs tmux (scripts/deps.sh installs it).

use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux server (its own socket), killed when dropped; one session `t`.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn new(tag: &str) -> Tmux {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is not installed (scripts/deps.sh installs it)"
        );
        Tmux {
            socket: format!("llctop-test-{tag}-{}", std::process::id()),
        }
    }

    pub fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn start(&self, shell: &str) {
        self.cmd(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "160",
            "-y",
            "50",
            "bash",
            "-c",
            shell,
        ]);
    }

    pub fn capture(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    /// Wait until the pane shows one of `any`, returning the screen.
    pub fn wait_for(&self, any: &[&str], what: &str) -> String {
        self.wait_until(
            |s| any.iter().any(|n| s.contains(n)),
            &format!("{what}: none of {any:?}"),
        )
    }

    /// Wait until the screen satisfies `done` (a screen caught mid-redraw on a busy
    /// machine is captured again), returning it.
    pub fn wait_until(&self, done: impl Fn(&str) -> bool, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.capture();
            if done(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("{what} on screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}
