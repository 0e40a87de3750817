/**
 * How an interactive task's terminal treats typed keys at one moment: two local flags of its
 * termios, as the program in it last set them (`BashExecutor.terminalModes`). A snapshot: the
 * program can change them right after it was read.
 *
 * What it is for: a reply a person types for a task (`bash_input {ask_user}`) goes only to a
 * program that waits for it the way password prompts do (`read -s`, sudo, ssh, passwd, getpass):
 * echo off, line mode on. It says nothing about what that program does with the reply afterwards.
 */
export interface TerminalModes {
  /** ECHO: the terminal itself shows every typed key (`cat`, `read p`, a shell waiting for a command). */
  readonly echo: boolean
  /**
   * ICANON: the terminal collects a line (Backspace edits it) and hands it over at Enter. False
   * (raw or cbreak mode): the program reads each key itself and may draw it — readline prompts
   * (`python3 -i`, `bash -i`, `read -e`, psql) turn the terminal's echo off and echo the keys
   * themselves, so `echo: false` alone never means "not shown" there.
   */
  readonly canonical: boolean
}
