//! The written sections of the manual pages, which clap's definitions do
//! not hold: examples per command, the environment and the files lockbox
//! reads. Each example is (what it does, the command line).

/// The examples of the page of `path` (`[]` for lockbox's).
pub fn examples(path: &[String]) -> &'static [(&'static str, &'static str)] {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match path.as_slice() {
        [] => &[
            ("Archive a directory, asking for a password twice.", "lockbox create -o home.lbox -C ~ docs"),
            (
                "List it, then pull one file out.",
                "lockbox list home.lbox; lockbox cat home.lbox docs/todo.txt",
            ),
            ("Extract everything into a directory.", "lockbox extract home.lbox -C restored"),
            (
                "Read an archive from a pipe; the password is asked on the terminal.",
                "cat home.lbox | lockbox list -",
            ),
            ("Install the manual pages.", "lockbox man --install ~/.local/share/man"),
        ],
        ["create"] => &[
            ("Archive two directories under DIR.", "lockbox create -o a.lbox -C DIR src docs"),
            ("Lock to an age recipient instead of a password.", "lockbox create -r age1... -o a.lbox dir"),
            (
                "Lock to a YubiKey through its age plugin (age-plugin-yubikey on PATH).",
                "lockbox create -r age1yubikey1... -o a.lbox dir",
            ),
            (
                "A team's recipients, each slot named (key list shows them).",
                "lockbox create -R team.txt --key-label alice --key-label bob -o a.lbox dir",
            ),
            ("Convert a tar stream.", "tar -cf - dir | lockbox create --from-tar - -o a.lbox"),
            ("Archive the files a list names.", "find . -name '*.c' | lockbox create -T - -o src.lbox"),
            (
                "Only what changed this week, without caches.",
                "lockbox create --newer '7 days ago' --exclude-caches -o w.lbox ~",
            ),
            ("Write to an object store.", "lockbox create -o s3://bucket/a.lbox dir"),
            ("Sign it with a signing key (see keygen --sign).", "lockbox create --sign me.key -o a.lbox dir"),
            ("Leave the other cores free: one worker thread.", "lockbox create --threads 1 -o a.lbox dir"),
        ],
        ["list"] => &[
            ("Long listing, as tar -tv.", "lockbox list -l a.lbox"),
            ("Times in UTC, to the second.", "lockbox list -l --utc --full-time a.lbox"),
            ("An archive on stdin.", "cat a.lbox | lockbox list -"),
        ],
        ["extract"] => &[
            ("Extract into a directory.", "lockbox extract a.lbox -C out"),
            ("Open with an age identity.", "lockbox extract -i key.txt a.lbox -C out"),
            ("Keep what is intact of a damaged archive.", "lockbox extract --keep-going a.lbox -C out"),
            ("Finish an interrupted extract.", "lockbox extract --skip-old-files a.lbox -C out"),
            ("Drop the top directory of each name.", "lockbox extract --strip-components 1 a.lbox -C out"),
        ],
        ["cat"] => &[
            ("One file's content to stdout.", "lockbox cat a.lbox notes/todo.txt | less"),
            (
                "Only if the archive is signed by this key.",
                "lockbox cat --signer lbsig1... a.lbox notes/todo.txt",
            ),
        ],
        ["info"] => &[
            ("Facts as JSON.", "lockbox info --json a.lbox"),
            (
                "What keeping 7 days and 4 weeks would reclaim, together and each alone.",
                "lockbox info --keep-daily 7 --keep-weekly 4 a.lbox",
            ),
        ],
        ["log"] => &[
            ("Every session: when, label, what it stored and removed.", "lockbox log a.lbox"),
            ("The same in UTC, as JSON lines.", "lockbox log --utc --json a.lbox"),
            ("A file as it was at a time (local).", "lockbox cat --at '2026-12-01 18:00' a.lbox notes.txt"),
        ],
        ["diff"] => &[
            ("What changed from state 3 to the last.", "lockbox diff a.lbox --from 3"),
            ("Between two states, as JSON lines.", "lockbox diff --json a.lbox --from -3 --to -2"),
            ("What changed on disk since the last session.", "lockbox diff a.lbox -C ~ docs"),
            ("The same by size and mtime only.", "lockbox diff --quick a.lbox -C ~ docs"),
        ],
        ["verify"] => &[
            ("Check every page and file; exit 3 on damage.", "lockbox verify a.lbox"),
            (
                "Also check that every session is signed by this key.",
                "lockbox verify --signer me.key.pub a.lbox",
            ),
        ],
        ["mount"] => &[
            ("Browse an archive read-only until Ctrl-C.", "lockbox mount a.lbox /mnt/a"),
            ("Compare it with the tree it came from.", "diff -r /mnt/a src"),
        ],
        ["umount"] => &[("Unmount what lockbox mount serves there.", "lockbox umount /mnt/a")],
        ["keygen"] => &[
            ("An age identity; its recipient on stdout.", "lockbox keygen -o key.txt"),
            ("A post-quantum hybrid identity.", "lockbox keygen --pq -o pq.txt"),
            ("A key file for scripts.", "lockbox keygen --symmetric -o lockbox.key"),
            ("A signing key and me.key.pub; its fingerprint on stdout.", "lockbox keygen --sign -o me.key"),
        ],
        ["key"] | ["key", "list"] => &[("Show the slots.", "lockbox key list a.lbox")],
        ["key", "add"] => &[
            ("Add a recipient, unlocking with the password.", "lockbox key add a.lbox -r age1..."),
            ("Add a second password.", "lockbox key add a.lbox --password"),
            (
                "Name the new slot (key list shows it).",
                "lockbox key add a.lbox -r age1... --key-label office",
            ),
        ],
        ["key", "remove"] => &[("Remove slot 2 (see key list).", "lockbox key remove a.lbox 2")],
        ["passwd"] => &[("Change the password.", "lockbox passwd a.lbox")],
        ["add"] => &[
            ("Store new and replaced files.", "lockbox add a.lbox -C DIR newdir"),
            ("Say what would be stored and replaced; write nothing.", "lockbox add -n -v a.lbox newdir"),
            (
                "Sign the change, trusting a co-author's earlier sessions.",
                "lockbox add --sign me.key --signer lbsig1... a.lbox f",
            ),
        ],
        ["update"] => &[(
            "Store what changed; remove what vanished.",
            "lockbox update a.lbox -C DIR --delete-missing src",
        )],
        ["rm"] => &[
            ("Remove a directory and all below it.", "lockbox rm a.lbox old/"),
            ("Name what would be removed; remove nothing.", "lockbox rm -n -v a.lbox old/"),
        ],
        ["compact"] => &[
            ("Drop what later sessions replaced.", "lockbox compact a.lbox"),
            ("How many bytes it would reclaim, as JSON.", "lockbox compact -n --json a.lbox"),
            (
                "Keep a week of days, a month of weeks, a year of months.",
                "lockbox compact --keep-daily 7 --keep-weekly 4 --keep-monthly 12 a.lbox",
            ),
        ],
        ["repair"] => &[
            ("Cut off an interrupted update.", "lockbox repair a.lbox"),
            ("The same, its summary as JSON.", "lockbox repair --json a.lbox"),
        ],
        ["export"] => &[("As a tar stream.", "lockbox export a.lbox -o - | tar -tvf -")],
        ["copy"] => &[(
            "An archive on S3, appends and all, to one file.",
            "lockbox copy s3://backups/home.lbox -o home.lbox",
        )],
        ["completions"] => &[(
            "Bash completion.",
            "lockbox completions bash > ~/.local/share/bash-completion/completions/lockbox",
        )],
        ["man"] => &[
            ("Read a command's page.", "lockbox man key add | man -l -"),
            ("Install every page.", "lockbox man --install /usr/local/share/man"),
        ],
        _ => &[],
    }
}

/// The variables lockbox reads.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "LOCKBOX_PASSWORD",
        "The password, when --password-file is not given; removed from the environment at start.",
    ),
    ("LOCKBOX_NEW_PASSWORD", "The new password of passwd and key add --password."),
    (
        "TZ",
        "The local time zone of dates given without a zone (--newer) and of list -l; else /etc/localtime.",
    ),
    ("TMPDIR", "Where an archive read from stdin is spooled (the file is unnamed at exit)."),
    (
        "AWS_ENDPOINT_URL, AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE",
        "The object store of s3:// archives and its credentials, as the AWS tools read them.",
    ),
    ("AWS_ALLOW_HTTP", "Allow a plain-HTTP endpoint, as --allow-http."),
    ("PATH", "Where the age plugins of age1NAME1... recipients and AGE-PLUGIN-NAME-1... identities are found (age-plugin-NAME)."),
];

/// The files lockbox reads besides its arguments.
pub const FILES: &[(&str, &str)] = &[
    ("/dev/tty", "Passwords and passphrases are asked here, also when stdin carries data."),
    ("/etc/localtime, /usr/share/zoneinfo", "The local time zone when TZ is unset, and the zones TZ names."),
    ("~/.aws/config, ~/.aws/credentials", "Object-store settings and credentials of s3:// archives."),
    (
        "ARCHIVE.lbox",
        "A new archive has no name until it is complete and synced (an unnamed inode, O_TMPFILE, where the file system allows), then is given its name; one that replaces an archive is linked under a temporary name and renamed over it.",
    ),
];
