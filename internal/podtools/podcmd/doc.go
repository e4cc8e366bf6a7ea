// Package podcmd builds the commands of the in-pod tools, `launch` and
// `data split`, for both programs that have them: the paddlejob CLI and the
// paddlejob-launch binary training images copy. One construction, so that
// their flags, help and behaviour cannot drift apart.
package podcmd
