fn main() {
    afl::fuzz!(|data: &[u8]| revault_lockbox_api::fuzz::recovery(data));
}
