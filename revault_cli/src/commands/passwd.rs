//! `passwd`: the password slot the current password opens, rewritten with
//! a new password at the same position, which it names.

use anyhow::{Context, Result};
use revault_lockbox_api::{slots, KdfParams, Quoted};

use super::{in_place, Outcome};
use crate::flags::PasswdArgs;
use crate::output;
use crate::password::{self, Purpose};

pub fn run(a: PasswdArgs) -> Result<Outcome> {
    in_place(&a.archive, "passwd")?;
    let name = Quoted::path(&a.archive).to_string();
    let old = password::get(a.password.password_file.as_deref(), Purpose::Open, &name)?;
    let new = password::get_new(a.new_password_file.as_deref(), &name)?;
    let slot = slots::change_password(&a.archive, &old, &new, KdfParams::default())
        .with_context(|| format!("changing the password of {}", Quoted::path(&a.archive)))?;
    // As `key add` says which slot it wrote: the number `key remove` takes.
    output::say(format_args!("{}: changed the password of slot {slot}", Quoted::path(&a.archive)));
    Ok(Outcome::Success)
}
