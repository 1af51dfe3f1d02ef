// Package trustedfile opens the files, and checks the directories, that
// an NRI runtime takes code and configuration from: the executables and
// WebAssembly modules of its plugin directory, the plugins'
// configuration files, its compilation cache of WebAssembly modules. The
// runtime usually runs as root, and these files decide what code it runs
// and with what input, so each must be one that no other user can have
// written.
//
// The rules, on Unix:
//
//   - A trusted file is a regular file (not a FIFO, a device, a socket or
//     a directory) owned by root or by the process's effective user, and
//     not writable by its group or by others. Its size is capped by the
//     caller. [Open] and [ReadFile] open it once, without blocking (a
//     FIFO cannot hang the open), check it through the open descriptor
//     (what is checked is what is read, whatever happens to the path
//     meanwhile) and read at most the cap. Symbolic links are followed:
//     the file they lead to is checked.
//   - A trusted directory ([CheckDir]) is owned by root or the effective
//     user and not writable by its group or others, and so is every
//     directory on the way to it from the root, except that a directory
//     on the way may be writable by others if it has the sticky bit (as
//     /tmp has: others cannot rename or replace what they do not own).
//     Every symbolic link followed on the way is owned by root or the
//     effective user. So no other user can change what the path names.
//   - [CheckPath] checks a file that is used by its path later (an
//     executable, which is exec'ed by path): the file is trusted and the
//     way to it is, as for a directory, so the file the path names
//     cannot be replaced by another user between the check and its use.
//
// Group ownership is not taken into account: a file writable by its group
// is refused even if the group has no other member (as with a umask of
// 002 and per-user groups): chmod g-w such files.
//
// On other systems (Windows) only the file-type and size rules apply;
// access control is left to the system's ACLs.
package trustedfile
