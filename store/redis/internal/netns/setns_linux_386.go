package netns

// sysSetns is setns(2), which package syscall names on some platforms only.
const sysSetns = 346
